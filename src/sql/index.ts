// Statement routing: who may run what, and where each statement goes.
export { SqlService } from './sql-service.js';
