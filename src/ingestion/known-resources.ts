// The resources of logs bodies stored as received, kept by their bytes: a sender names the same resource in every
// request, and decoding it (protobufjs), its canonical key and the ids derived from that cost the ack path more
// per request than anything else left on the event loop but HTTP and the file calls (#16).
import { decodeLogs, resourceKey, resourceSkeleton, type Attributes, type ScannedResourceLogs } from './otlp/index.js';

/** A resource as its blocks need it. */
export interface KnownResource {
  /** Its attributes, the server's own (`micromegas.`) left out. */
  readonly attributes: Attributes;
  /** resourceKey of `attributes`: what the process id derives from. */
  readonly key: string;
}

/** Bytes of resource fields kept at most (keys of the map); past it the map starts again empty. */
const MAX_BYTES = 4 << 20;

export class KnownResources {
  private readonly known = new Map<string, KnownResource>();
  private bytes = 0;

  /**
   * The resources of the scanned ResourceLogs of `body`: from the map when every one is in it, otherwise all
   * decoded from the body's resource skeleton as before (which checks them: a bad one throws, with its place
   * in the body, and is not kept). `clean` removes what a client may not set.
   */
  resources(
    body: Uint8Array,
    scanned: readonly ScannedResourceLogs[],
    clean: (attributes: Attributes) => Attributes,
  ): KnownResource[] {
    const keys = scanned.map((r) => bytesKey(body, r));
    const found = keys.map((key) => this.known.get(key));
    if (found.every((k) => k !== undefined)) return found as KnownResource[];
    return decodeLogs(resourceSkeleton(body, scanned), 'protobuf').map((group, i) => {
      const attributes = clean(group.resource.attributes);
      const resource = { attributes, key: resourceKey(attributes) };
      this.keep(keys[i], resource);
      return resource;
    });
  }

  private keep(key: string, resource: KnownResource): void {
    if (this.known.has(key) || key.length > MAX_BYTES / 64) return;
    if (this.bytes + key.length > MAX_BYTES) {
      this.known.clear();
      this.bytes = 0;
    }
    this.known.set(key, resource);
    this.bytes += key.length;
  }
}

/** The bytes of a ResourceLogs's resource and schema URL fields (tags included), as a string key. */
function bytesKey(body: Uint8Array, r: ScannedResourceLogs): string {
  const text = (range: readonly [number, number]): string =>
    range[0] < 0 ? '' : Buffer.from(body.buffer, body.byteOffset + range[0], range[1] - range[0]).toString('latin1');
  return text(r.resource) + text(r.schemaUrl);
}
