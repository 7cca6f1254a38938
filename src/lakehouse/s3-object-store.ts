import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type ListMultipartUploadsCommandOutput,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { ObjectStore } from './object-store.js';

/** Where an `s3://` store is and how to sign for it (MICROMEGAS_OBJECT_STORE_URI and the AWS_* settings). */
export interface S3Settings {
  readonly bucket: string;
  /** The key prefix under the bucket, without slashes at either end ('' for the bucket's root). */
  readonly prefix: string;
  readonly region: string;
  /** AWS_ENDPOINT_URL(_S3): an S3-compatible server (addressed path-style); unset: AWS itself. */
  readonly endpoint: URL | undefined;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string | undefined;
}

const bucketName = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
/** Prefix segments Orrery can spell inside a SQL literal and an allowed_directories entry without escaping. */
const prefixSegment = /^[A-Za-z0-9._=+-]+$/;

/** Reads `s3://bucket/prefix` and the AWS_* variables; a bad one throws, naming the variable. */
export function s3Settings(uri: string, env: NodeJS.ProcessEnv): S3Settings {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri);
  const bucket = match?.[1] ?? '';
  if (!bucketName.test(bucket))
    throw new Error(`MICROMEGAS_OBJECT_STORE_URI: '${bucket}' is not an S3 bucket name (in '${uri}')`);
  const segments = (match?.[2] ?? '').split('/').filter((s) => s !== '');
  if (segments.some((s) => !prefixSegment.test(s) || s === '.' || s === '..'))
    throw new Error(
      `MICROMEGAS_OBJECT_STORE_URI: the prefix of '${uri}' may hold only letters, digits and . _ = + - between slashes`,
    );
  const accessKeyId = env.AWS_ACCESS_KEY_ID ?? '';
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY ?? '';
  if (!accessKeyId || !secretAccessKey)
    throw new Error('MICROMEGAS_OBJECT_STORE_URI is s3://: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set');
  const endpointText = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL;
  let endpoint: URL | undefined;
  if (endpointText) {
    const variable = env.AWS_ENDPOINT_URL_S3 ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL';
    endpoint = URL.canParse(endpointText) ? new URL(endpointText) : undefined;
    if (!endpoint || !['http:', 'https:'].includes(endpoint.protocol) || endpoint.pathname.replace(/\/+$/, '') !== '')
      throw new Error(
        `${variable} must be an http:// or https:// URL of a server, without a path, got '${endpointText}'`,
      );
  }
  return {
    bucket,
    prefix: segments.join('/'),
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    endpoint,
    accessKeyId,
    secretAccessKey,
    sessionToken: env.AWS_SESSION_TOKEN || undefined,
  };
}

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * Objects in an S3 bucket under a prefix, written and deleted from Node with the AWS SDK; DuckDB
 * reads and writes the same objects through httpfs, signing with a secret scoped to the prefix.
 * A PUT is atomic on S3 (an object is absent or whole); create-only writes send `If-None-Match: *`.
 */
export class S3ObjectStore implements ObjectStore {
  readonly root: string;
  readonly aliases: readonly string[];
  readonly duckdbSetup: readonly string[];
  /**
   * DuckDB keeps what it read of a file (size, footer, pages) in its external file cache, bounded by its memory
   * limit and evicted least recently used first; by default it checks each cached file with a HEAD at every open,
   * one request per partition file per statement. Nothing needs that check here: a partition file is written once
   * under a key of its own (object-keys.ts) and never rewritten, and which files a statement reads comes from
   * Postgres, so a retired file is never named again and a new partition is a new key. DuckLake's files, payloads
   * and scratch files are also never rewritten. (DuckDB's HTTP metadata cache would also drop the HEAD, but it
   * grows without bound.)
   */
  readonly duckdbSettings: readonly string[] = ["SET GLOBAL validate_external_file_cache = 'NO_VALIDATION'"];
  readonly needsHttpfs = true;
  private readonly client: S3Client;
  private readonly keyPrefix: string;

  constructor(private readonly settings: S3Settings) {
    const { bucket, prefix, region, endpoint } = settings;
    this.keyPrefix = prefix ? `${prefix}/` : '';
    this.root = `s3://${bucket}/${this.keyPrefix}`;
    this.aliases = endpoint
      ? [`${endpoint.origin}/${bucket}/${this.keyPrefix}`]
      : [
          `https://${bucket}.s3.amazonaws.com/${this.keyPrefix}`,
          `https://${bucket}.s3.${region}.amazonaws.com/${this.keyPrefix}`,
        ];
    this.client = new S3Client({
      region,
      endpoint: endpoint?.origin,
      forcePathStyle: endpoint !== undefined,
      credentials: {
        accessKeyId: settings.accessKeyId,
        secretAccessKey: settings.secretAccessKey,
        sessionToken: settings.sessionToken,
      },
      // Checksums only where S3 requires them: not every S3-compatible server accepts the newer ones.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const options = [
      'TYPE s3',
      `KEY_ID ${literal(settings.accessKeyId)}`,
      `SECRET ${literal(settings.secretAccessKey)}`,
      ...(settings.sessionToken ? [`SESSION_TOKEN ${literal(settings.sessionToken)}`] : []),
      `REGION ${literal(region)}`,
      ...(endpoint
        ? [`ENDPOINT ${literal(endpoint.host)}`, "URL_STYLE 'path'", `USE_SSL ${endpoint.protocol === 'https:'}`]
        : []),
      `SCOPE ${literal(this.root)}`,
    ];
    this.duckdbSetup = [`CREATE SECRET orrery_object_store (${options.join(', ')})`];
  }

  close(): void {
    this.client.destroy();
  }

  location(key: string): string {
    return `${this.root}${this.objectKey(key).slice(this.keyPrefix.length)}`;
  }

  writableLocation(key: string): Promise<string> {
    return Promise.resolve(this.location(key));
  }

  // Every PUT is durable on S3 once it answers: `durable` changes nothing here.
  async put(key: string, bytes: Uint8Array): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(key), Body: bytes }),
    );
  }

  async putNew(key: string, parts: readonly Uint8Array[]): Promise<void> {
    // An object store's PUT is atomic already: the object in one body.
    await this.put(key, parts.length === 1 ? parts[0] : Buffer.concat(parts));
  }

  // A PUT has nothing to do ahead of its body.
  reserveNew(): void {}

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    const command = new PutObjectCommand({
      Bucket: this.settings.bucket,
      Key: this.objectKey(key),
      Body: bytes,
      IfNoneMatch: '*',
    });
    // 409: another conditional write of the key is under way; once it ends, the key exists or is free again.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.send(command);
        return true;
      } catch (error) {
        if (statusOf(error) === 412) return false;
        if (statusOf(error) !== 409 || attempt >= 5) throw error;
        if ((await this.size(key)) !== null) return false;
        await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
      }
    }
  }

  async get(key: string): Promise<Uint8Array> {
    const answer = await this.client.send(
      new GetObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(key) }),
    );
    if (!answer.Body) throw new Error(`object '${key}' came back without a body`);
    return answer.Body.transformToByteArray();
  }

  async readRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    if (length === 0) return (await this.size(key)) === null ? null : new Uint8Array();
    try {
      const answer = await this.client.send(
        new GetObjectCommand({
          Bucket: this.settings.bucket,
          Key: this.objectKey(key),
          Range: `bytes=${offset}-${offset + length - 1}`,
        }),
      );
      return answer.Body ? (await answer.Body.transformToByteArray()).subarray(0, length) : new Uint8Array();
    } catch (error) {
      if (statusOf(error) === 404) return null;
      if (statusOf(error) === 416) return new Uint8Array(); // the object ends before `offset`
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(key) }));
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const page of this.pages(prefix)) for (const object of page) keys.push(object.key);
    return keys.sort();
  }

  async listBetween(prefix: string, after: string, until: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const page of this.pages(prefix, after))
      for (const object of page) {
        if (object.key > until) return keys;
        if (object.key > after) keys.push(object.key);
      }
    return keys;
  }

  async *listWrittenBefore(prefix: string, before: Date): AsyncGenerator<string[]> {
    for await (const page of this.pages(prefix))
      yield page.filter((object) => object.written < before).map((object) => object.key);
  }

  async abortUploadsStartedBefore(before: Date): Promise<number> {
    let aborted = 0;
    let [keyMarker, uploadIdMarker]: Array<string | undefined> = [];
    do {
      const page: ListMultipartUploadsCommandOutput = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.settings.bucket,
          Prefix: this.keyPrefix,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId || !upload.Initiated || upload.Initiated >= before) continue;
        await this.client.send(
          new AbortMultipartUploadCommand({ Bucket: this.settings.bucket, Key: upload.Key, UploadId: upload.UploadId }),
        );
        aborted++;
      }
      [keyMarker, uploadIdMarker] = page.IsTruncated ? [page.NextKeyMarker, page.NextUploadIdMarker] : [];
    } while (keyMarker);
    return aborted;
  }

  /**
   * The objects under a prefix (after `startAfter`, when given), one listing page at a time, in key order: object
   * keys and when each was written.
   */
  private async *pages(prefix: string, startAfter?: string): AsyncGenerator<Array<{ key: string; written: Date }>> {
    let token: string | undefined;
    do {
      const page: ListObjectsV2CommandOutput = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.settings.bucket,
          Prefix: this.objectKey(prefix),
          StartAfter: startAfter === undefined ? undefined : this.objectKey(startAfter),
          ContinuationToken: token,
        }),
      );
      yield (page.Contents ?? []).flatMap((object) =>
        object.Key
          ? [{ key: object.Key.slice(this.keyPrefix.length), written: object.LastModified ?? new Date(0) }]
          : [],
      );
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async size(key: string): Promise<number | null> {
    try {
      const head = await this.client.send(
        new HeadObjectCommand({ Bucket: this.settings.bucket, Key: this.objectKey(key) }),
      );
      return head.ContentLength ?? 0;
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }

  /** The bucket key of an object key: under the prefix, never above it. */
  private objectKey(key: string): string {
    if (key.startsWith('/') || key.split('/').some((segment) => segment === '..' || segment === '.'))
      throw new Error(`object key '${key}' leaves the store`);
    return `${this.keyPrefix}${key}`;
  }
}

function statusOf(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}
