package export

// ColumnKind is how a typed format writes the value of a top-level record key.
type ColumnKind int

const (
	// ColumnString is a string, written as a UTF-8 string (BYTE_ARRAY, STRING).
	ColumnString ColumnKind = iota
	// ColumnInt is an integer, written as a signed 64-bit integer (INT64).
	ColumnInt
	// ColumnStringList is a list of strings, written as LIST<STRING> (elements not null).
	ColumnStringList
	// ColumnJSON is any value, written as its compact JSON text in a UTF-8 string: object
	// keys sorted, numbers as they were read, the same text as the value in the jsonl format.
	ColumnJSON
)

// Column is one column of a typed format: a top-level record key and its kind.
type Column struct {
	Name string
	Kind ColumnKind
}

// ParquetColumns are the fixed columns of the parquet format, in order.
var ParquetColumns = []Column{
	{"id", ColumnString}, {"datasetName", ColumnString}, {"bucket", ColumnString},
	{"status", ColumnString}, {"schemaVersion", ColumnString}, {"revision", ColumnInt},
	{"manualTags", ColumnStringList}, {"computedTags", ColumnStringList}, {"tags", ColumnStringList},
	{"comment", ColumnString}, {"scenarioId", ColumnString},
	{"assignedTo", ColumnString}, {"assignedAt", ColumnString}, {"updatedAt", ColumnString},
	{"updatedBy", ColumnString}, {"reviewedAt", ColumnString}, {"createdBy", ColumnString},
	{"createdAt", ColumnString},
	{"totalReferences", ColumnInt}, {"references", ColumnJSON},
	{"history", ColumnJSON}, {"contextEntries", ColumnJSON}, {"toolCalls", ColumnJSON},
	{"expectedTools", ColumnJSON}, {"feedback", ColumnJSON}, {"metadata", ColumnJSON},
	{"plugins", ColumnJSON}, {"traceIds", ColumnJSON}, {"tracePayload", ColumnJSON},
	{"docType", ColumnString}, {"_etag", ColumnString},
}

// The file's key-value metadata.
const (
	ParquetMetaSchemaVersion = "gtc.schemaVersion"
	ParquetMetaSnapshotAt    = "gtc.snapshotAt"
	ParquetMetaFilters       = "gtc.filters" // the filters echo, as JSON
)
