package gcs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/cairnstore/cairn/bucket"
	"google.golang.org/api/iterator"
)

// listAttrs are the object fields a listing asks for.
var listAttrs = []string{"Name", "Size", "Generation", "Updated", "CRC32C"}

// entry is one object or folded prefix of a listing, by full name.
type entry struct {
	name  string
	attrs *storage.ObjectAttrs // nil for a prefix
}

// List implements bucket.Bucket.
//
// It pages by itself rather than handing out the server's page tokens: a
// token is the last entry of the page ("k" + key or "p" + prefix, relative
// to the adapter's prefix), and the next page asks the server for names
// from there on (startOffset) and drops what it has already returned.
// This keeps StartAfter and folded prefixes exactly as bucket.ListSorted
// defines them, and bounds a page by objects and prefixes together.
//
// It asks for one entry more than the page holds and, on GCS, reads
// further server pages only when dropped entries left the page short.
// fake-gcs-server pages differently (its maxResults counts only objects,
// and each of its pages carries every folded prefix from its start on),
// and the same code is right there too: its first answer holds at least
// PageSize objects after the one dropped, and everything up to them.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return bucket.ListPage{}, fmt.Errorf("gcs: list %q: %w", opts.Prefix, err)
	}
	n := bucket.PageSize(opts.PageSize)
	full := b.prefix + opts.Prefix
	after := "" // list only names greater than this
	if opts.StartAfter != "" {
		after = b.prefix + opts.StartAfter
	}
	skip := "" // a folded prefix returned on an earlier page
	if tok := opts.PageToken; tok != "" {
		switch tok[0] {
		case 'k':
		case 'p':
			skip = b.prefix + tok[1:]
		default:
			return bucket.ListPage{}, fmt.Errorf("gcs: list %q: %w: bad page token", opts.Prefix, bucket.ErrInvalidKey)
		}
		after = max(after, b.prefix+tok[1:])
	}

	var entries []entry
	// StartAfter may fall inside a folded prefix, which is listed if any
	// key under it comes after StartAfter. Servers differ on whether
	// startOffset keeps such a prefix, so the adapter finds out itself.
	if opts.Delimiter != "" && strings.HasPrefix(after, full) {
		rest := after[len(full):]
		if j := strings.Index(rest, opts.Delimiter); j >= 0 {
			p := full + rest[:j+len(opts.Delimiter)]
			if p != skip {
				found, err := b.anyAfter(ctx, p, after)
				if err != nil {
					return bucket.ListPage{}, fail(ctx, "list", opts.Prefix, false, err)
				}
				if found {
					// Not listed again below: p is not after StartAfter.
					entries = append(entries, entry{name: p})
				}
			}
		}
	}
	head := len(entries)

	q := &storage.Query{Prefix: full, Delimiter: opts.Delimiter, Projection: storage.ProjectionNoACL}
	if after > full {
		q.StartOffset = after
	}
	if err := q.SetAttrSelection(listAttrs); err != nil {
		return bucket.ListPage{}, fmt.Errorf("gcs: list %q: %w", opts.Prefix, err)
	}
	it := b.reads.Objects(ctx, q)
	it.PageInfo().MaxSize = n + 1
	seen := map[string]bool{}
	done := false
	for {
		oa, err := it.Next()
		if errors.Is(err, iterator.Done) {
			done = true
			break
		}
		if err != nil {
			return bucket.ListPage{}, fail(ctx, "list", opts.Prefix, false, err)
		}
		e := entry{name: oa.Prefix}
		if oa.Prefix == "" {
			e = entry{name: oa.Name, attrs: oa}
		}
		if e.name > after && e.name != skip && !seen[e.name] {
			seen[e.name] = true
			entries = append(entries, e)
		}
		if it.PageInfo().Remaining() > 0 {
			continue // finish the server's page first
		}
		if it.PageInfo().Token == "" {
			done = true
			break
		}
		if len(entries) >= n {
			break
		}
	}
	rest := entries[head:]
	sort.Slice(rest, func(i, j int) bool { return rest[i].name < rest[j].name })

	var page bucket.ListPage
	for i, e := range entries {
		if i == n {
			break
		}
		if e.attrs == nil {
			page.Prefixes = append(page.Prefixes, strings.TrimPrefix(e.name, b.prefix))
		} else {
			page.Objects = append(page.Objects, b.attrs(e.attrs))
		}
	}
	if len(entries) > n || !done {
		last := entries[min(n, len(entries))-1]
		tag := "k"
		if last.attrs == nil {
			tag = "p"
		}
		page.NextPageToken = tag + strings.TrimPrefix(last.name, b.prefix)
	}
	return page, nil
}

// anyAfter reports whether some object under prefix p is named after name.
func (b *Bucket) anyAfter(ctx context.Context, p, name string) (bool, error) {
	q := &storage.Query{Prefix: p, StartOffset: name, Projection: storage.ProjectionNoACL}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return false, err
	}
	it := b.reads.Objects(ctx, q)
	it.PageInfo().MaxSize = 2
	for range 2 {
		oa, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if oa.Name > name {
			return true, nil
		}
	}
	return false, nil
}
