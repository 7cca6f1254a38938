// Loads the OTLP .proto files (proto/opentelemetry/) with protobufjs at run time.
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import type { OtlpSignal } from './otlp-types.js';

const protoDir = fileURLToPath(new URL('../../../../proto/', import.meta.url));

// Upstream imports are relative to the proto root ("opentelemetry/proto/common/v1/common.proto").
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => (isAbsolute(target) ? target : join(protoDir, target));
root.loadSync(['logs', 'metrics', 'trace'].map((s) => `opentelemetry/proto/collector/${s}/v1/${s}_service.proto`));
root.resolveAll();

const collector = (signal: OtlpSignal, name: string): protobuf.Type =>
  root.lookupType(`opentelemetry.proto.collector.${signal === 'traces' ? 'trace' : signal}.v1.${name}`);

/** The Export*ServiceRequest message type of each signal. */
export const exportRequestTypes: Readonly<Record<OtlpSignal, protobuf.Type>> = {
  logs: collector('logs', 'ExportLogsServiceRequest'),
  metrics: collector('metrics', 'ExportMetricsServiceRequest'),
  traces: collector('traces', 'ExportTraceServiceRequest'),
};

/** The Export*ServiceResponse message type of each signal. */
export const exportResponseTypes: Readonly<Record<OtlpSignal, protobuf.Type>> = {
  logs: collector('logs', 'ExportLogsServiceResponse'),
  metrics: collector('metrics', 'ExportMetricsServiceResponse'),
  traces: collector('traces', 'ExportTraceServiceResponse'),
};

/** True for a message protobufjs decoded (as opposed to a value parsed from JSON). */
export const isProtoMessage = (value: object): value is protobuf.Message => value instanceof protobuf.Message;

/** True for a 64-bit integer protobufjs decoded. */
export const isLong = (value: unknown): value is protobuf.Long => value instanceof protobuf.util.Long;
