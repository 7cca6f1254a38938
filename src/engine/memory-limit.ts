/** Bytes of a size in DuckDB's memory_limit syntax ('4GB', '512MiB', and as DuckDB prints it, '61.0 MiB'). */
export function sizeBytes(value: string): number {
  const [, number, prefix, binary] = /^(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B$/i.exec(value.trim())!;
  return Number(number) * (binary ? 1024 : 1000) ** ' KMGT'.indexOf(prefix.toUpperCase() || ' ');
}
