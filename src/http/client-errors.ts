// The requests Node's HTTP parser refuses before any of ours runs (server.ts), answered as problems by
// the one problem writer (problems.ts, writeProblem) rather than Node's bare status line.
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, validationFailed } from '../errors.ts';
import { writeProblem } from './problems.ts';

/**
 * Answers with a problem the requests Node's HTTP parser refuses before any of ours runs: framing it
 * cannot read (two Content-Lengths, an unknown method, a bare LF), headers past its 16 KiB, a request
 * that takes longer than the server's timeouts to arrive. Node would answer them with a bare status line.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node's own handler: nothing is written once the connection's response under way has begun.
    const underWay = (socket as Duplex & { _httpMessage?: { headersSent: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || underWay?.headersSent) return void socket.destroy();
    writeProblem(socket, clientErrorProblem(error));
  });
}

function clientErrorProblem({ code }: NodeJS.ErrnoException): ApiError {
  if (code === 'HPE_HEADER_OVERFLOW') return new ApiError('headers_too_large', 'The request headers are larger than 16 KiB.');
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return new ApiError('payload_too_large', 'The request body has too many chunk extensions.');
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ApiError('request_timeout', 'The request did not arrive in time.');
  return validationFailed('The request is not valid HTTP/1.1.');
}
