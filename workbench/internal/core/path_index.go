package core

import (
	"bytes"
	"slices"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// SecondaryIndex rows of a path: what publication keeps beside each
// PathCurrent row (format 11) so that a query with a selective predicate
// reads an index range instead of every row of its scope (query_index.go).
//
// # What is indexed
//
// Three built-in fields, each its own index (and so its own shard, paged
// when large), with the id "artifact.<field>":
//
//   - content_type: the usual filter and facet of a search ("every
//     application/json output"); short values, so a row is small.
//   - logical_size: the range queries ("files over 1 MB"), and the order
//     of a size-sorted listing.
//   - body_digest_uri: exact lookups ("where else is this body"), the most
//     selective predicate there is; its row is the largest (a 71-byte
//     value).
//
// Not indexed: generation (nearly every path has a small one, so no
// predicate on it is selective), manifest_id and producer (the Workbench
// tools never set them), path and workbench_id (the scope already narrows
// by them: a query's path prefix is a PathCurrent prefix scan).
//
// A fourth index, "artifact.index_fields", holds one null-valued row for
// each path whose entry carries custom index fields (PathEntry.Index; the
// Workbench tools write none). A query may answer from the built-in
// indexes only when its scope has no such row: custom fields' types are
// inferred across the whole scope (query.go), which only a scan can do.
//
// # Rows
//
// A row's key is root | index id | encoded value | incarnation | path
// (nokv.SecondaryIndexKey) and its value the path's generation and
// revision (nokv.SecondaryIndexEntry). Publication rewrites every row of
// the path (the generation moves on) and deletes the rows whose value
// changed, in the same command that writes the PathCurrent row. A new
// path adds four rows of about 100 to 170 bytes each to the commit's delta
// (docs/performance.md has the figures).

// PathIndexIDs maps each indexed built-in field to its index id.
var PathIndexIDs = map[string]string{
	"body_digest_uri": "artifact.body_digest_uri",
	"content_type":    "artifact.content_type",
	"logical_size":    "artifact.logical_size",
}

// CustomFieldsIndexID is the index of the paths that carry custom fields.
const CustomFieldsIndexID = "artifact.index_fields"

// PathIndexKeys returns the keys of the SecondaryIndex rows of the entry e
// at path of incarnation inc, in key order.
func PathIndexKeys(root nokv.RootID, inc nokv.IncarnationID, path []string, e *nokv.PathEntry) ([][]byte, error) {
	row := QueryRow{Path: path, E: *e}
	var out [][]byte
	for field, id := range PathIndexIDs {
		v, _ := row.Value(field)
		k, err := nokv.SecondaryIndexKey{Root: root, IndexID: id, Value: v, Incarnation: inc, Path: path}.Encode()
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if len(e.Index) > 0 {
		k, err := nokv.SecondaryIndexKey{Root: root, IndexID: CustomFieldsIndexID, Value: nokv.NullScalar(), Incarnation: inc, Path: path}.Encode()
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	slices.SortFunc(out, bytes.Compare)
	return out, nil
}

// WritePathIndex replaces the SecondaryIndex rows of the path's entry old
// (nil for a new path) with those of its new entry: it puts every row of
// next and deletes the rows of old that next does not have.
func WritePathIndex(tx *head.Tx, root nokv.RootID, inc nokv.IncarnationID, path []string, old *nokv.PathEntry, next *nokv.PathEntry) error {
	keys, err := PathIndexKeys(root, inc, path, next)
	if err != nil {
		return err
	}
	v, err := nokv.SecondaryIndexEntry{PathGeneration: next.Generation, Revision: next.Revision}.Encode()
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Put(nokv.FamilySecondaryIndex, k, v); err != nil {
			return err
		}
	}
	if old == nil {
		return nil
	}
	gone, err := PathIndexKeys(root, inc, path, old)
	if err != nil {
		return err
	}
	for _, k := range gone {
		if _, kept := slices.BinarySearchFunc(keys, k, bytes.Compare); kept {
			continue
		}
		if err := tx.Delete(nokv.FamilySecondaryIndex, k); err != nil {
			return err
		}
	}
	return nil
}

// QueryRow is one artifact of a query's scope.
type QueryRow struct {
	Wb   string
	Path []string
	E    nokv.PathEntry
}

// Value returns the row's value of field id and whether the row has it.
func (r *QueryRow) Value(id string) (nokv.IndexScalar, bool) {
	optional := func(p *string) nokv.IndexScalar {
		if p == nil {
			return nokv.NullScalar()
		}
		return nokv.StringScalar(*p)
	}
	switch id {
	case "body_digest_uri":
		return nokv.StringScalar(r.E.BodyDigestURI), true
	case "content_type":
		return nokv.StringScalar(r.E.ContentType), true
	case "generation":
		return nokv.UnsignedScalar(r.E.Generation), true
	case "logical_size":
		return nokv.UnsignedScalar(r.E.LogicalSize), true
	case "manifest_id":
		return optional(r.E.ManifestID), true
	case "path":
		return nokv.StringScalar(LogicalPath(r.Path)), true
	case "producer":
		return optional(r.E.Producer), true
	case "workbench_id":
		return nokv.StringScalar(r.Wb), true
	}
	return r.E.Index.Lookup(id)
}
