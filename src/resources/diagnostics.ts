import type { Diagnostic } from './declarations.js';

/** One diagnostic as a compiler prints it: `<file>: <entry>: error|warning: <message>`. */
export const diagnosticText = (d: Diagnostic): string =>
  `${d.file}: ${d.entry === null ? '' : `${d.entry}: `}${d.severity}: ${d.message}`;
