// Starts Swagger UI on the page of GET /docs (index.html here), after swagger-ui-bundle.js. A file of its
// own rather than an inline script, so that the page's Content-Security-Policy can refuse every inline script.
window.ui = SwaggerUIBundle({
  // Same origin: the document the service is built from, with this origin as its server (src/docs/files.ts,
  // docsDocument), so that "Try it out" calls the service that served the page, whatever its host and port.
  url: '/docs/openapi.yaml',
  dom_id: '#swagger-ui',
  deepLinking: true,
  // Swagger UI's default, https://validator.swagger.io/validator, would have the browser send the
  // document's URL to that host for a badge. Our own tests validate the document.
  validatorUrl: null,
  // Swagger UI's default too, said here so that it stays so: `?url=` or `?configUrl=` in the page's
  // address must not load a document, or a configuration, from another host.
  queryConfigEnabled: false,
});
