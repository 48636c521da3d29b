// read-parquet.mjs FILE — reads a Parquet file with hyparquet (an implementation independent of
// the writer) and prints one JSON document on standard output:
//   {"schema": [{"name", "type", "logicalType", "repetition", "numChildren"}...],  (the flat schema, root first)
//    "keyValueMetadata": {key: value}, "rowGroups": [{"numRows", "codecs": [...]}...],
//    "rows": [{column: value}...]}
// 64-bit integers are printed as decimal strings, so that no digit is lost; a null list is
// printed as null.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'

const path = process.argv[2]
if (!path) {
  process.stderr.write('usage: node read-parquet.mjs FILE\n')
  process.exit(2)
}
const file = await asyncBufferFromFile(path)
const metadata = await parquetMetadataAsync(file)
const rows = await parquetReadObjects({ file, metadata })
const topLevel = []
for (let i = 1, skip = 0; i < metadata.schema.length; i++) {
  const s = metadata.schema[i]
  if (skip === 0) topLevel.push(s.name)
  else skip--
  skip += s.num_children ?? 0
}
const out = {
  schema: metadata.schema.map(s => ({
    name: s.name,
    type: s.type ?? null,
    logicalType: s.logical_type?.type ?? null,
    repetition: s.repetition_type ?? null,
    numChildren: s.num_children ?? 0,
  })),
  keyValueMetadata: Object.fromEntries((metadata.key_value_metadata ?? []).map(kv => [kv.key, kv.value])),
  rowGroups: metadata.row_groups.map(rg => ({
    numRows: Number(rg.num_rows),
    codecs: [...new Set(rg.columns.map(c => c.meta_data.codec))],
  })),
  // hyparquet leaves a null list out of its row: put every top-level column in every row.
  rows: rows.map(row => Object.fromEntries(topLevel.map(name => [name, row[name] ?? null]))),
}
process.stdout.write(JSON.stringify(out, (_, v) => typeof v === 'bigint' ? v.toString() : v))
