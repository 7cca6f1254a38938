// The one module that reaches into apache-arrow's internals: the IPC message classes and the
// assembler that lays a batch's buffers out as an IPC body. The public writer copies every body
// into a stream of its own; with these the sender frames the body where it lies (arrow/ framing
// room). Internals may change in any release, so package.json pins apache-arrow exactly and
// test/wire/arrow-internals.test.ts fails on an upgrade that changes what is used here.
export {
  DictionaryBatch as DictionaryBatchHeader,
  Message,
  RecordBatch as RecordBatchHeader,
} from 'apache-arrow/ipc/metadata/message';
export { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
