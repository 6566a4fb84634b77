// The same call as a shell command: curl against the canonical REST route, grpcurl against the
// port the server says serves native gRPC (the server offers reflection, so grpcurl needs no
// .proto files); where none does (a proxy under uvicorn) there is no grpcurl command. The token
// is left as $PORTICO_TOKEN so a pasted command never carries a live credential.
import { api, canonicalPath } from './api.js';

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
  // Both ports serve TLS or neither: an https page means a TLS gRPC port. (An IPv6 hostname
  // comes in its brackets.)
  return [
    location.protocol === 'https:' ? 'grpcurl' : 'grpcurl -plaintext',
    `-H "authorization: Bearer $PORTICO_TOKEN"`,
    `-d ${quote(body)}`,
    `${location.hostname}:${api.grpcPort}`,
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
