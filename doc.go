// Package gtc is the domain of the Ground Truth Curator backend: the ground-truth item and its
// parts, statuses, callers, errors, the interfaces every outside dependency satisfies (item
// store, tagger, clock) and the curation service that applies the rules. It does no I/O of its
// own; the subpackages implement its interfaces against SQLite, Cosmos DB, Blob Storage, the
// local disk and HTTP, and cmd/gtc wires them together.
package gtc
