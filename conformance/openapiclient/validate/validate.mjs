// Validates an OpenAPI document with @readme/openapi-parser: the OpenAPI
// 3.1 schema and the parser's own rules (unique operation ids, path
// parameters, arrays with items...). Warnings fail too.
//
//   node validate.mjs openapi.json
//   node validate.mjs http://127.0.0.1:7070/openapi.json
import { readFile } from 'node:fs/promises';
import { compileErrors, validate } from '@readme/openapi-parser';

const where = process.argv[2];
if (!where) {
  console.error('usage: node validate.mjs FILE|URL');
  process.exit(2);
}
let text;
if (/^https?:\/\//.test(where)) {
  const resp = await fetch(where);
  if (!resp.ok) {
    console.error(`GET ${where}: ${resp.status}`);
    process.exit(1);
  }
  text = await resp.text();
} else {
  text = await readFile(where, 'utf8');
}
const doc = JSON.parse(text);
const result = await validate(doc);
if (!result.valid || result.warnings.length > 0) {
  console.error(compileErrors(result));
  process.exit(1);
}
const ops = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
console.log(`${where}: a valid OpenAPI ${doc.openapi} document (${ops} operations, ${Object.keys(doc.components.schemas).length} schemas)`);
