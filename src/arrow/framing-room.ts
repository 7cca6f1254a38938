// Free room in front of a record batch body, left by whoever built the batch so that whoever sends
// it can write its framing (IPC message header, transport prefix) in place and send header and
// body as one buffer, without copying the body. The builder lays the batch's buffers out in IPC
// order, each padded to 8 bytes, right after the room, and marks the ArrayBuffer; the sender
// checks the layout before using the room, so a batch that is sliced or rearranged is simply
// copied as usual.

const rooms = new WeakMap<ArrayBufferLike, number>();

/** Bytes to leave for the framing of a batch with this many columns (IPC header and 64 bytes of transport). */
export function framingRoomFor(columns: number): number {
  return 256 + 64 * columns;
}

/** Marks bytes [0, bodyStart) of `buffer` as free for framing; the body starts at `bodyStart`. */
export function markFramingRoom(buffer: ArrayBufferLike, bodyStart: number): void {
  rooms.set(buffer, bodyStart);
}

/**
 * Where the body starts in `buffer` when the views `parts` sit there exactly at the given
 * body offsets (IPC order, padded to 8 bytes) after a marked room; null otherwise.
 */
export function bodyInPlace(
  parts: readonly ArrayBufferView[],
  regions: ReadonlyArray<{ offset: number; length: number }>,
  bodyLength: number,
): { buffer: ArrayBufferLike; bodyStart: number } | null {
  let buffer: ArrayBufferLike | null = null;
  for (let i = 0; i < parts.length; i++) {
    if (regions[i].length === 0) continue;
    buffer ??= parts[i].buffer;
    if (parts[i].buffer !== buffer || parts[i].byteLength > regions[i].length) return null;
  }
  if (!buffer) return null;
  const bodyStart = rooms.get(buffer);
  if (bodyStart === undefined || bodyStart + bodyLength > buffer.byteLength) return null;
  for (let i = 0; i < parts.length; i++) {
    if (regions[i].length > 0 && parts[i].byteOffset !== bodyStart + regions[i].offset) return null;
  }
  return { buffer, bodyStart };
}
