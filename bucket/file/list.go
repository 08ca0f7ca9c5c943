package file

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/bucket"
)

// List implements bucket.Bucket. It walks the directory of the prefix's
// complete segments, then reads the headers of the objects on the page.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	if b.closed.Load() {
		return bucket.ListPage{}, opErr("list", opts.Prefix, fmt.Errorf("bucket is closed: %w", fs.ErrClosed))
	}
	if err := ctx.Err(); err != nil {
		return bucket.ListPage{}, opErr("list", opts.Prefix, err)
	}
	segs := strings.Split(opts.Prefix, "/")
	dir, base := b.dir, ""
	for _, s := range segs[:len(segs)-1] {
		name := "d" + escape(s)
		if len(name) > maxNameLen {
			dir = "" // no key can have this segment
			break
		}
		dir += "/" + name
		base += s + "/"
	}
	after, err := bucket.ListAfter(opts)
	if err != nil {
		return bucket.ListPage{}, opErr("list", opts.Prefix, err)
	}
	var walkErr error
	keys := func(yield func(bucket.Attrs) bool) {
		if dir != "" {
			_, walkErr = walk(ctx, dir, base, segs[len(segs)-1], after, yield)
		}
	}
	page, err := bucket.ListSeq(keys, opts)
	if err == nil {
		err = walkErr
	}
	if err != nil {
		return bucket.ListPage{}, opErr("list", opts.Prefix, err)
	}
	var objs []bucket.Attrs
	for _, a := range page.Objects {
		if err := ctx.Err(); err != nil {
			return bucket.ListPage{}, opErr("list", opts.Prefix, err)
		}
		l, err := locate(b.dir, a.Key)
		if err != nil {
			return bucket.ListPage{}, opErr("list", opts.Prefix, err)
		}
		h, st, err := readHeader(l.path)
		if notExist(err) {
			continue // deleted since the walk
		}
		if err != nil {
			return bucket.ListPage{}, opErr("list", opts.Prefix, fmt.Errorf("%q: %w", a.Key, err))
		}
		objs = append(objs, attrs(a.Key, h, st))
	}
	page.Objects = objs
	return page, nil
}

// walk yields, in key order, every key stored under dir (whose keys
// start with base) that is greater than after; of dir's own entries only
// those whose segment starts with first. It reports false once yield has
// (the listing has its page), and skips every directory whose keys all
// come at or before after, so a page costs the directories on its way,
// not the whole tree.
func walk(ctx context.Context, dir, base, first, after string, yield func(bucket.Attrs) bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f, err := os.Open(dir)
	if notExist(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return false, err
	}
	// An entry sorts as its segment if it is an object and as the
	// segment and "/" if it is a directory: every key under a directory
	// starts so, and no segment holds a "/", so this is the order of
	// the keys themselves.
	type entry struct {
		sortKey, seg, name string
		isDir              bool
	}
	var es []entry
	for _, e := range ents {
		name := e.Name()
		if name == "" || (name[0] != 'o' && name[0] != 'd') {
			continue // the adapter's own files, or foreign ones
		}
		seg, ok := unescape(name[1:])
		if !ok || !strings.HasPrefix(seg, first) {
			continue
		}
		switch {
		case name[0] == 'o' && e.Type().IsRegular():
			es = append(es, entry{sortKey: seg, seg: seg, name: name})
		case name[0] == 'd' && e.IsDir():
			es = append(es, entry{sortKey: seg + "/", seg: seg, name: name, isDir: true})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, e := range es {
		if !e.isDir {
			key := base + e.seg
			if key <= after || bucket.ValidateKey(key) != nil {
				continue
			}
			if !yield(bucket.Attrs{Key: key}) {
				return false, nil
			}
			continue
		}
		prefix := base + e.seg + "/"
		if prefix <= after && !strings.HasPrefix(after, prefix) {
			continue // every key under it is before after
		}
		more, err := walk(ctx, dir+"/"+e.name, prefix, "", after, yield)
		if err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// Usage returns how many objects the bucket holds and the sum of their
// sizes, from the file system's own sizes: one walk of the directory
// tree, without opening any object. It counts what a whole listing
// would, without reading a header (so a damaged header is counted, not
// reported), and is meant for figures about a store, such as a
// benchmark's bytes stored: at the 2.2 million objects of a
// million-file store a listing opens every one of them.
func (b *Bucket) Usage(ctx context.Context) (objects int, bytes int64, err error) {
	if b.closed.Load() {
		return 0, 0, opErr("usage", "", fmt.Errorf("bucket is closed: %w", fs.ErrClosed))
	}
	err = filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if notExist(err) && path != b.dir {
				return nil // removed since its directory was read
			}
			return err
		}
		if path == b.dir {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if name[0] != 'd' {
				return fs.SkipDir // the adapter's own files, or foreign ones
			}
			return ctx.Err()
		}
		if name[0] != 'o' || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if notExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		objects++
		bytes += max(fi.Size()-headerLen, 0)
		return nil
	})
	if err != nil {
		return 0, 0, opErr("usage", "", err)
	}
	return objects, bytes, nil
}
