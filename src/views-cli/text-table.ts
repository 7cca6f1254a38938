/** Rows under a header, columns padded to their widest cell; the last column is not padded. */
export function textTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>, indent = '  '): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    indent +
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** A message on one line: runs of whitespace (newlines included) become one space. */
export const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();
