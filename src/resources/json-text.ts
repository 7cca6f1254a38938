// JSON.parse keeps the last of two equal keys without a word; a resources file with a key twice is an
// error (the spec's Validation), so files are read by this small parser, which reports every repeat.

/** A parsed JSON document and the keys that appear twice in one object, as paths (`resources.pod_name`). */
export interface JsonText {
  readonly value: unknown;
  readonly repeatedKeys: readonly string[];
}

/** Parses `text` as JSON (RFC 8259); throws a SyntaxError naming the line and column of the problem. */
export function parseJsonText(text: string): JsonText {
  const repeatedKeys: string[] = [];
  let at = 0;
  const fail = (what: string): never => {
    const before = text.slice(0, at);
    const line = before.split('\n').length;
    const column = at - before.lastIndexOf('\n');
    throw new SyntaxError(`${what} at line ${line}, column ${column}`);
  };
  const space = (): void => {
    while (at < text.length && ' \t\n\r'.includes(text[at])) at++;
  };
  const expect = (char: string): void => {
    space();
    if (text[at] !== char) fail(at >= text.length ? `expected '${char}', found the end` : `expected '${char}'`);
    at++;
  };
  const string = (): string => {
    // eslint-disable-next-line no-control-regex -- JSON strings may not hold raw control characters
    const match = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(at));
    if (!match) fail('malformed string');
    at += match![0].length;
    return JSON.parse(match![0]) as string;
  };
  const value = (path: string): unknown => {
    space();
    const char = text[at];
    if (char === '{') {
      at++;
      const object: Record<string, unknown> = {};
      space();
      if (text[at] === '}') return (at++, object);
      for (;;) {
        space();
        if (text[at] !== '"') fail('expected a key');
        const key = string();
        const keyPath = path === '' ? key : `${path}.${key}`;
        if (Object.prototype.hasOwnProperty.call(object, key)) repeatedKeys.push(keyPath);
        expect(':');
        object[key] = value(keyPath);
        space();
        if (text[at] === ',') at++;
        else return (expect('}'), object);
      }
    }
    if (char === '[') {
      at++;
      const array: unknown[] = [];
      space();
      if (text[at] === ']') return (at++, array);
      for (;;) {
        array.push(value(`${path}[${array.length}]`));
        space();
        if (text[at] === ',') at++;
        else return (expect(']'), array);
      }
    }
    if (char === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(at));
    if (!literal) fail(at >= text.length ? 'unexpected end' : `unexpected '${char}'`);
    at += literal![0].length;
    return JSON.parse(literal![0]) as unknown;
  };
  const result = value('');
  space();
  if (at < text.length) fail('unexpected text after the document');
  return { value: result, repeatedKeys };
}
