// read-parquet.mjs FILE — reads a Parquet file with hyparquet (an implementation independent of
// the writer) and prints one JSON document on standard output:
//   {"schema": [{"name", "type", "logicalType", "repetition", "numChildren"}...],  (the flat schema, root first)
//    "keyValueMetadata": {key: value}, "rowGroups": [{"numRows", "codecs": [...]}...],
//    "rows": [{column: value}...]}
// 64-bit integers are printed as decimal strings, so that no digit is lost.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const path = process.argv[2]
if (!path) {
  process.stderr.write('usage: node read-parquet.mjs FILE\n')
  process.exit(2)
}
const file = await asyncBufferFromFile(path)
const metadata = await parquetMetadataAsync(file)
const rows = await parquetReadObjects({ file, metadata, compressors })
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
  rows,
}
process.stdout.write(JSON.stringify(out, (_, v) => typeof v === 'bigint' ? v.toString() : v))
