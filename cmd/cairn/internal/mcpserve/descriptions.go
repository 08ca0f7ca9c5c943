package mcpserve

// descriptions holds the one-line summary tools/list gives each tool, so
// a model can pick the right one; the input schema says the rest.
var descriptions = map[string]string{
	"workbench_create":          "Create a workbench with its five standard sections; repeating the same create succeeds.",
	"workbench_put_file":        "Write a whole file: create-only by default, replace-only with replace=true (never an upsert).",
	"workbench_append":          "Append bytes to a file, creating it if missing; returns the new size and generation and the digest of the appended bytes.",
	"workbench_edit":            "Replace an exact UTF-8 string in a text file (one match required unless replace_all=true); an identical result writes nothing.",
	"workbench_list":            "List one directory level, a page at a time with a cursor, live or at a snapshot.",
	"workbench_stat":            "Describe a file or directory (kind, size, generation, digest, content type) without reading its body, live or at a snapshot.",
	"workbench_read":            "Read a file as structured JSON/YAML/text records or as base64 byte ranges; if_none_match skips an unchanged generation.",
	"workbench_grep":            "Search file bodies for up to 16 case-insensitive literal patterns (not regular expressions), optionally filtered by a basename glob.",
	"workbench_search":          "Query file metadata with predicates, sorting, projected fields and facets, in one workbench or across all of them.",
	"workbench_aggregate":       "Count, sum, average, min or max file metadata, grouped, filtered and sorted, with a bounded number of groups.",
	"workbench_catalog":         "List the metadata field ids and the query operators that search and aggregate accept.",
	"workbench_find":            "Find workbenches by their committed state and by literal values in their run manifest.",
	"workbench_commit":          "Commit a workbench's run manifest under a deterministic identity; an exact retry replays, a different head needs replace=true.",
	"workbench_snapshot":        "Take a leased point-in-time snapshot of a committed workbench, optionally named and annotated (7-day default lease, 90 days at most).",
	"workbench_snapshot_renew":  "Extend a live snapshot's lease, by id or name; a lease is never shortened.",
	"workbench_snapshot_retire": "Retire a snapshot; the first success reports retired=true and a repeat reports retired=false.",
	"workbench_snapshot_list":   "List snapshots with their state (alive, expired, retired or reaped), names, annotations and lease times.",
	"workbench_restore":         "Restore paths of a snapshot into a new workbench, leaving the source unchanged; an exact retry converges.",
}
