// The same call as a shell command: curl against the canonical REST route, grpcurl against the
// gRPC port (the server offers reflection, so grpcurl needs no .proto files). The token is left
// as $PORTICO_TOKEN so a pasted command never carries a live credential.
import { canonicalPath } from './api.js';

export const GRPC_PORT = 50051; // the default; `portico serve --grpc-port` may differ

function quote(text) {
  return `'${String(text).replace(/'/g, `'\\''`)}'`;
}

export function curlCommand(method, body) {
  const url = `${location.origin}${canonicalPath(method.rpc)}`;
  const parts = ['curl -sS'];
  if (method.serverStreaming) parts.push('-N');
  parts.push(`-X POST ${quote(url)}`);
  parts.push(`-H "Authorization: Bearer $PORTICO_TOKEN"`);
  parts.push(`-H ${quote(`Content-Type: ${method.clientStreaming ? 'application/x-ndjson' : 'application/json'}`)}`);
  if (method.serverStreaming) parts.push(`-H ${quote('Accept: application/x-ndjson')}`);
  parts.push(`--data-binary ${quote(body)}`);
  return parts.join(' \\\n  ');
}

export function grpcurlCommand(method, body) {
  const dot = method.rpc.lastIndexOf('.');
  const target = `${method.rpc.slice(0, dot)}/${method.rpc.slice(dot + 1)}`;
  return [
    'grpcurl -plaintext',
    `-H "authorization: Bearer $PORTICO_TOKEN"`,
    `-d ${quote(body)}`,
    `${location.hostname}:${GRPC_PORT}`,
    target,
  ].join(' \\\n  ');
}

export async function copyText(text) {
  // The Clipboard API needs a secure context (https or localhost); elsewhere the command is
  // still shown, selected, for Ctrl+C.
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (error) {
      return false;
    }
  }
  return false;
}
