// Package query holds the metadata queries, workbench_search,
// workbench_aggregate and workbench_catalog: the rows of a scope, the
// predicates, sorts and facets over them, the secondary index that
// narrows a scope (query_index.go), and the signed query cursor that grep
// and find also use (query_cursor.go).
package query
