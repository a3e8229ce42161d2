// Small DOM helpers shared by the explorer's modules: building elements without innerHTML
// (every value from the server is set as text, never parsed as markup), the status line, and
// duration formatting.

/** An element with attributes (`testid` becomes data-testid; `on*` functions become listeners). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'testid') element.dataset.testid = value;
    else if (name === 'text') element.textContent = value;
    else if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (name === 'className') element.className = value;
    else element.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** The element with this id. */
export const byId = (id) => document.getElementById(id);

/** Sets the status line; `kind` is '' or 'error' or 'ok'. */
export function setStatus(text, kind = '') {
  const status = byId('status');
  status.textContent = text;
  status.className = `status ${kind}`;
}

/** The status line for a failed request: the server's message, with its HTTP status. */
export function showError(prefix, error) {
  const status = error?.status ? ` (${error.status}${error.code ? ' ' + error.code : ''})` : '';
  setStatus(`${prefix}${status}: ${error?.message ?? error}`, 'error');
}

/** "4 m 12 s", "3 h 5 m", "2 d 4 h", "0.8 s". */
export function formatDuration(ms) {
  const negative = ms < 0;
  let rest = Math.abs(ms);
  let text;
  if (rest < 10_000) text = `${(rest / 1000).toFixed(1)} s`;
  else if (rest < 3_600_000) text = `${Math.floor(rest / 60_000)} m ${Math.floor((rest % 60_000) / 1000)} s`;
  else if (rest < 86_400_000) text = `${Math.floor(rest / 3_600_000)} h ${Math.floor((rest % 3_600_000) / 60_000)} m`;
  else text = `${Math.floor(rest / 86_400_000)} d ${Math.floor((rest % 86_400_000) / 3_600_000)} h`;
  return negative ? `-${text}` : text;
}

/** The same instant in UTC and local time, for tooltips. */
export function formatInstant(ms) {
  const date = new Date(ms);
  return `${date.toISOString()} UTC · ${date.toLocaleString()} local`;
}

/** Runs `work` with `button` disabled meanwhile. */
export async function busy(button, work) {
  const was = button.disabled;
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = was;
  }
}
