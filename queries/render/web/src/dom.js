// Small DOM helpers: elements are built with textContent and attributes
// only, never HTML strings.

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

export function ms(v) {
  if (v === null || v === undefined) return '—';
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
}

export function signed(v) {
  if (v === null || v === undefined) return '—';
  return (v > 0 ? '+' : v < 0 ? '−' : '') + ms(Math.abs(v));
}

// Colours (Tableau 10, distinguishable with the common colour-vision
// deficiencies): H2 blue, H3 orange; the lines also differ in dash.
export const colH2 = '#4e79a7';
export const colH3 = '#f28e2b';
export const colInk = '#222';
export const colGrid = '#e4e4e4';
