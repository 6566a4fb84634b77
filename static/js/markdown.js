// Markdown of the .proto comments (descriptions) rendered as DOM nodes: paragraphs, bullet
// lists, `code`, **bold**, *emphasis* and [links](address). Only text nodes and a fixed set of
// elements are made, so a description can never inject HTML or script; links go only to http(s).
import { element } from './dom.js';

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))/g;

function inline(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    const token = match[0];
    if (match[1]) nodes.push(element('code', { text: token.slice(1, -1) }));
    else if (match[2]) nodes.push(element('strong', {}, ...inline(token.slice(2, -2))));
    else if (match[3]) nodes.push(element('em', {}, ...inline(token.slice(1, -1))));
    else {
      const [, label, href] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(token);
      if (/^https?:\/\//i.test(href)) {
        nodes.push(element('a', { href, rel: 'noopener noreferrer', target: '_blank' }, ...inline(label)));
      } else {
        nodes.push(document.createTextNode(token));
      }
    }
    last = match.index + token.length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

export function renderMarkdown(source) {
  const fragment = document.createDocumentFragment();
  const blocks = String(source || '').replace(/\r\n?/g, '\n').split(/\n\s*\n/);
  for (const block of blocks) {
    const lines = block.split('\n').filter((line) => line.trim());
    if (!lines.length) continue;
    if (lines.every((line) => /^\s*[-*]\s+/.test(line))) {
      fragment.append(element('ul', {}, ...lines.map((line) => element('li', {}, ...inline(line.replace(/^\s*[-*]\s+/, ''))))));
    } else if (lines.every((line) => /^ {4}|^\t/.test(line))) {
      fragment.append(element('pre', { text: lines.map((line) => line.replace(/^ {4}|^\t/, '')).join('\n') }));
    } else {
      fragment.append(element('p', {}, ...inline(lines.map((line) => line.trim()).join(' '))));
    }
  }
  return fragment;
}
