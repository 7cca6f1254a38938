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
