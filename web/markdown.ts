// A reply's Markdown as HTML (CommonMark, GitHub's tables and fenced code, through markdown-it).
// Nothing of a session's content becomes markup: raw HTML is shown as text, images are not
// rendered, and a link is a link only to http:, https: or mailto: (in a new tab, without opener or
// referrer); anything else stays text. The page's CSP is the second wall.
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
md.disable('image');
md.validateLink = (url: string) => /^(https?:|mailto:)/i.test(url.trim());

const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, i, options, _env, self) => self.renderToken(tokens, i, options));
md.renderer.rules.link_open = (tokens, i, options, env, self) => {
  tokens[i]!.attrSet('target', '_blank');
  tokens[i]!.attrSet('rel', 'noopener noreferrer');
  return defaultLinkOpen(tokens, i, options, env, self);
};

/** Fenced code as `pre > code`, with a Copy button (the page's click handler copies the code beside it). */
md.renderer.rules.fence = (tokens, i) => {
  const token = tokens[i]!;
  const language = token.info.trim().split(/\s+/)[0] ?? '';
  const label = language === '' ? 'Copy' : `Copy ${language}`;
  const code = md.utils.escapeHtml(token.content);
  return `<div class="code"><button type="button" class="copy" aria-label="${md.utils.escapeHtml(label)}">Copy</button><pre><code>${code}</code></pre></div>\n`;
};

export function markdownHtml(text: string): string {
  return md.render(text);
}
