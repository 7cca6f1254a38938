/** Where the metadata component reports what it does; the same shape as the server's log. */
export type MetadataLog = (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void;
