import type { PayloadPlace } from './object-keys.js';
import type { ObjectStore } from './object-store.js';

/**
 * A block's payload bytes; null when its object is gone from the store. A segment of a group's object that
 * was cut short (the object damaged) comes back short, as a whole object cut short does.
 */
export async function readPayload(store: ObjectStore, place: PayloadPlace): Promise<Uint8Array | null> {
  if (place.size !== null) return store.readRange(place.key, place.offset, place.size);
  return store.get(place.key).catch(async (error: unknown) => {
    if ((await store.size(place.key)) === null) return null;
    throw error;
  });
}

/**
 * The payloads of blocks stored in one object (as readPayload gives each), in one read: the span their
 * segments cover (on S3 one ranged GET instead of one per block).
 */
export async function readPayloadsOfObject(
  store: ObjectStore,
  places: readonly PayloadPlace[],
): Promise<Array<Uint8Array | null>> {
  if (places.length === 1 || places.some((p) => p.size === null || p.key !== places[0].key))
    return Promise.all(places.map((place) => readPayload(store, place)));
  const begin = Math.min(...places.map((p) => p.offset));
  const end = Math.max(...places.map((p) => p.offset + p.size!));
  const span = await store.readRange(places[0].key, begin, end - begin);
  return places.map((p) => span && span.subarray(p.offset - begin, p.offset - begin + p.size!));
}
