// The package ships no types: what bench/seed.ts reads of it.
declare module 'popular-english-words' {
  export const words: {
    /** The `count` most popular English words, most popular first. */
    getMostPopular(count: number): string[];
  };
}
