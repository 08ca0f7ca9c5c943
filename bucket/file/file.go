package file

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

func init() {
	bucket.Register("file", open)
}

func open(_ context.Context, u *url.URL) (bucket.Bucket, error) {
	if _, err := bucket.Query(u); err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	if u.Opaque != "" || u.User != nil || (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
		return nil, errors.New("file: want file:///ABSOLUTE/PATH")
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("file: unexpected fragment %q", u.Fragment)
	}
	// u.Path is already decoded, once: an encoded "..%2F" is a ".."
	// segment here, and would lead out of the directory the URL names.
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("file: path %q has a %q segment: name the directory itself", u.Path, seg)
		}
	}
	return New(u.Path)
}

const (
	locksDir  = ".locks"
	tmpPrefix = ".tmp-"
	stripes   = 256
)

// Bucket is a bucket kept in a local directory.
type Bucket struct {
	dir      string // absolute and clean
	treeLock string // path of the directory lock file
	closed   atomic.Bool
	locks    [stripes + 1]lockFile // the stripes', then the directory lock
	// noUnnamed is set once the file system has refused an unnamed file.
	noUnnamed atomic.Bool

	// syncDir makes a directory's entries durable. Tests replace it.
	syncDir func(dir string) error

	// syncFS makes durable everything written to the file system that
	// holds a directory, or is nil where the system has no call that does
	// so and reports failures (syncfs_*.go). Tests replace it.
	syncFS func(dir string) error

	// fileSyncs, dirSyncs and fsSyncs count the fsyncs of files and of
	// directories, and the syncs of the whole file system.
	fileSyncs, dirSyncs, fsSyncs atomic.Int64
}

// Syncs returns how many times the bucket has fsynced a file and a
// directory since it was opened: the cost of durability that a put or a
// commit pays on a local disk, which benchmarks report per operation.
// FileSystemSyncs counts the syncs of the whole file system.
func (b *Bucket) Syncs() (files, dirs int64) {
	return b.fileSyncs.Load(), b.dirSyncs.Load()
}

// FileSystemSyncs returns how many times the bucket has made its whole
// file system durable at once (syncfs(2)), for the puts of a SyncGroup.
func (b *Bucket) FileSystemSyncs() int64 { return b.fsSyncs.Load() }

var (
	_ bucket.Bucket      = (*Bucket)(nil)
	_ bucket.TempRemover = (*Bucket)(nil)
)

// New opens the bucket kept in dir, which must exist: a missing directory
// is ErrNoBucket, so that a mistyped path does not become a new, empty
// store. A relative dir is taken from the working directory. The root of
// the file system is refused.
func New(dir string) (*Bucket, error) {
	return openDir(dir, false)
}

// Create is New, but first creates dir and any missing parents: for a
// store whose place the program chooses, such as cairn's embedded
// ./cairn-data.
func Create(dir string) (*Bucket, error) {
	return openDir(dir, true)
}

func openDir(dir string, create bool) (*Bucket, error) {
	if dir == "" {
		return nil, errors.New("file: open: empty directory name")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("file: open %s: %w", dir, err)
	}
	if filepath.Dir(abs) == abs {
		return nil, fmt.Errorf("file: open %s: the root of the file system cannot be a bucket", abs)
	}
	b := &Bucket{dir: abs, treeLock: filepath.Join(abs, locksDir, "tree"), syncFS: fileSystemSync()}
	b.syncDir = func(dir string) error {
		b.dirSyncs.Add(1)
		return syncDir(dir)
	}
	if create {
		if err := b.makeRoot(); err != nil {
			return nil, fmt.Errorf("file: open %s: %w", abs, classify(err))
		}
	}
	st, err := os.Stat(abs)
	if notExist(err) {
		return nil, fmt.Errorf("file: open %s: %w: %w", abs, bucket.ErrNoBucket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("file: open %s: %w", abs, classify(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("file: open %s: not a directory", abs)
	}
	// Opening writes nothing: the lock directory is made by the first
	// write that takes a lock (lock), and temporary files of interrupted
	// writes are removed by RemoveTemps (cairn gc), so a bucket opened
	// only to read leaves its directory as it was.
	return b, nil
}

// classify marks the file system's refusals that another try cannot
// change with the port's sentinels, once, here: no permission or a
// read-only file system is ErrDenied, a full disk or an exhausted quota
// ErrNoSpace (bucket.Permanent). An error already classified, or a write
// that took effect but could not be synced (ErrAmbiguous), is left as it
// is.
func classify(err error) error {
	if bucket.Permanent(err) || errors.Is(err, bucket.ErrAmbiguous) {
		return err
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w: %w", bucket.ErrNoSpace, err)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w: %w", bucket.ErrDenied, err)
	}
	return err
}

// makeRoot creates the bucket's directory and any missing parents,
// syncing each new directory into its parent.
func (b *Bucket) makeRoot() error {
	var missing []string
	for d := b.dir; ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil {
			break
		}
		if !notExist(err) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		err := os.Mkdir(d, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := b.syncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Dir(d), err)
		}
	}
	return nil
}

// RemoveTemps implements bucket.TempRemover: it removes the temporary
// files of writes (.tmp-* in the bucket's directory) last modified more
// than olderThan ago, by this host's clock, or with dryRun only counts
// them. A write lives in its temporary file only between writing it and
// renaming it into place, so one much older than any write takes was
// left by a process that died (or stopped) mid-write; a writer that
// resumes after its file was removed fails its write with an error, and
// nothing it wrote is visible.
func (b *Bucket) RemoveTemps(ctx context.Context, olderThan time.Duration, dryRun bool) (int, error) {
	if b.closed.Load() {
		return 0, fmt.Errorf("file: remove temporary files: bucket is closed: %w", fs.ErrClosed)
	}
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return 0, fmt.Errorf("file: remove temporary files: %w", classify(err))
	}
	n := 0
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if !strings.HasPrefix(e.Name(), tmpPrefix) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) <= olderThan {
			continue // gone meanwhile, or young
		}
		if !dryRun {
			if err := os.Remove(filepath.Join(b.dir, e.Name())); err != nil {
				if notExist(err) {
					continue
				}
				return n, fmt.Errorf("file: remove temporary file %s: %w", e.Name(), classify(err))
			}
		}
		n++
	}
	return n, nil
}

// syncDir fsyncs a directory.
func syncDir(dir string) error { return syncFile(dir) }

// smallBody is the largest body written to its file together with the
// header, in one write.
const smallBody = 64 << 10

var errShortRead = errors.New("the file is shorter than its status says")

func errNotRegular(path string) error { return fmt.Errorf("%s is not a regular file", path) }

// fileInfo is what the bucket needs of an open file's status.
type fileInfo struct {
	size    int64
	mod     time.Time
	regular bool
}

// readFile reads the file at path: whole, or its first limit bytes if
// limit is not negative. A file that is not regular is an error.
func readFile(path string, limit int64) ([]byte, fileInfo, error) {
	f, err := openFile(path, openRead)
	if err != nil {
		return nil, fileInfo{}, err
	}
	defer f.close()
	fi, err := f.stat()
	if err != nil {
		return nil, fileInfo{}, err
	}
	if !fi.regular {
		return nil, fi, errNotRegular(path)
	}
	n := fi.size
	if limit >= 0 && n > limit {
		n = limit
	}
	buf := make([]byte, n)
	if err := f.readFull(buf); err != nil {
		return nil, fileInfo{}, err
	}
	return buf, fi, nil
}

// createFile writes header and body to a new file at path, which must
// not exist, syncs it if told to, and returns its modification time.
func createFile(path string, hdr, body []byte, sync bool) (time.Time, error) {
	f, err := openFile(path, openCreate)
	if err != nil {
		return time.Time{}, err
	}
	fi, err := writeNew(f, hdr, body, sync)
	if cerr := f.close(); err == nil {
		err = cerr
	}
	return fi.mod, err
}

func writeNew(f rawFile, hdr, body []byte, sync bool) (fileInfo, error) {
	if len(body) <= smallBody {
		// One write instead of two.
		hdr = append(hdr[:len(hdr):len(hdr)], body...)
		body = nil
	}
	if err := f.write(hdr); err != nil {
		return fileInfo{}, err
	}
	if err := f.write(body); err != nil {
		return fileInfo{}, err
	}
	if sync {
		if err := f.sync(); err != nil {
			return fileInfo{}, err
		}
	}
	return f.stat()
}

// syncFile fsyncs the file or directory at path.
func syncFile(path string) error {
	f, err := openFile(path, openRead)
	if err != nil {
		return err
	}
	err = f.sync()
	if cerr := f.close(); err == nil {
		err = cerr
	}
	return err
}

func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func opErr(op, key string, err error) error {
	return fmt.Errorf("file: %s %q: %w", op, key, classify(err))
}

// begin validates key, checks the bucket and ctx, and locates the key.
func (b *Bucket) begin(ctx context.Context, op, key string) (location, error) {
	if _, err := bucket.JoinKey("", key); err != nil {
		return location{}, opErr(op, key, err)
	}
	l, err := locate(b.dir, key)
	if err != nil {
		return location{}, opErr(op, key, err)
	}
	if b.closed.Load() {
		return location{}, opErr(op, key, fmt.Errorf("bucket is closed: %w", fs.ErrClosed))
	}
	if err := ctx.Err(); err != nil {
		return location{}, opErr(op, key, err)
	}
	return l, nil
}

// lock takes a lock file under .locks, recreating the directory if it
// has gone before the file's first use.
func (b *Bucket) lock(ctx context.Context, l *lockFile, path string, exclusive bool) (func(), error) {
	return l.hold(ctx, path, exclusive, func() (int, error) {
		fd, err := openLock(path)
		if err != nil && notExist(err) {
			if err := os.Mkdir(filepath.Join(b.dir, locksDir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return -1, err
			}
			fd, err = openLock(path)
		}
		return fd, err
	})
}

// lockTree takes the directory lock.
func (b *Bucket) lockTree(ctx context.Context, exclusive bool) (func(), error) {
	return b.lock(ctx, &b.locks[stripes], b.treeLock, exclusive)
}

// lockKey takes the stripe lock that guards key.
func (b *Bucket) lockKey(ctx context.Context, key string) (func(), error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	i := h.Sum32() % stripes
	return b.lock(ctx, &b.locks[i], fmt.Sprintf("%s/%s/%02x", b.dir, locksDir, i), true)
}

func attrs(key string, h header, st fileInfo) bucket.Attrs {
	return bucket.Attrs{Key: key, Size: h.size, Version: h.version(), ModTime: st.mod, Checksum: h.checksum()}
}

// readHeader reads and checks the header of the object file at path.
func readHeader(path string) (header, fileInfo, error) {
	buf, st, err := readFile(path, headerLen)
	if err != nil {
		return header{}, fileInfo{}, err
	}
	if len(buf) < headerLen {
		buf = make([]byte, headerLen) // decode reports the short file
	}
	h, err := decode(buf, st.size)
	if err != nil {
		return header{}, fileInfo{}, err
	}
	return h, st, nil
}

// Get implements bucket.Bucket. It verifies the body against the
// checksum in the header.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	l, err := b.begin(ctx, "get", key)
	if err != nil {
		return nil, bucket.Attrs{}, err
	}
	buf, st, err := readFile(l.path, -1)
	if notExist(err) {
		return nil, bucket.Attrs{}, opErr("get", key, bucket.ErrNotExist)
	}
	if err != nil {
		return nil, bucket.Attrs{}, opErr("get", key, err)
	}
	h, err := decode(buf, st.size)
	if err != nil {
		return nil, bucket.Attrs{}, opErr("get", key, err)
	}
	body := buf[headerLen:]
	if got := crc32.Checksum(body, castagnoli); got != h.crc {
		return nil, bucket.Attrs{}, opErr("get", key, fmt.Errorf("%w: body checksum %08x, header says %08x", bucket.ErrIntegrity, got, h.crc))
	}
	return body, attrs(key, h, st), nil
}

// Stat implements bucket.Bucket. It reads and checks only the header.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	l, err := b.begin(ctx, "stat", key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	h, st, err := readHeader(l.path)
	if notExist(err) {
		return bucket.Attrs{}, opErr("stat", key, bucket.ErrNotExist)
	}
	if err != nil {
		return bucket.Attrs{}, opErr("stat", key, err)
	}
	return attrs(key, h, st), nil
}

// check reports whether cond holds for the object at l. The caller holds
// the key's stripe lock.
func (b *Bucket) check(op, key string, l location, cond bucket.Condition) error {
	if cond.IsAbsent() {
		_, err := os.Lstat(l.path)
		switch {
		case err == nil:
			return opErr(op, key, fmt.Errorf("%w: object exists", bucket.ErrPrecondition))
		case notExist(err):
			return nil
		}
		return opErr(op, key, err)
	}
	v, ok := cond.Version()
	if !ok {
		return nil
	}
	h, _, err := readHeader(l.path)
	if notExist(err) {
		return opErr(op, key, fmt.Errorf("%w: object does not exist", bucket.ErrPrecondition))
	}
	if err != nil {
		return opErr(op, key, err)
	}
	if got := h.version(); got != v {
		return opErr(op, key, fmt.Errorf("%w: version is %s, not %s", bucket.ErrPrecondition, got, v))
	}
	return nil
}

// temp is an object's file before it is in place: a temporary file
// named in the root, or an unnamed one (openUnnamed) that only its open
// descriptor holds. Every named temporary file is made in the root, so
// puts in parallel queued on the root directory's lock while each made
// its file (a third of a put's CPU samples in the kernel, most of it
// spinning on that lock or allocating the inode); an unnamed file takes
// no lock on the directory, and a crash leaves nothing of it.
type temp struct {
	path      string  // the named file's
	f         rawFile // the unnamed file, open until discard
	unnamed   bool
	discarded bool
}

// discard closes an unnamed temp, and removes a named one not placed;
// once.
func (t *temp) discard(placed bool) {
	switch {
	case t.discarded:
	case t.unnamed:
		t.f.close()
	case !placed:
		os.Remove(t.path)
	}
	t.discarded = true
}

// tempPath returns a new temporary file's path in the root.
func (b *Bucket) tempPath() string {
	var r [8]byte
	rand.Read(r[:])
	return filepath.Join(b.dir, tmpPrefix+hex.EncodeToString(r[:]))
}

// writeTemp writes header and body to a new temporary file, unnamed if
// asked for and the system makes them, else named in the root, and syncs
// it unless told not to. It returns the file and its modification time.
// An unnamed file is made in dir, the directory it will be linked into,
// or in the root while dir does not exist: ext4 places a file's inode
// near its directory's, and files all made in the root crowd one block
// group, whose allocator then passes over every inode freed there in the
// last seconds (a fifth of a 100,000-file restore's CPU samples;
// docs/performance.md).
func (b *Bucket) writeTemp(hdr, body []byte, sync, unnamed bool, dir string) (*temp, time.Time, error) {
	if sync {
		b.fileSyncs.Add(1)
	}
	if unnamed && !b.noUnnamed.Load() {
		f, ok, err := openUnnamed(dir)
		if notExist(err) && dir != b.dir {
			f, ok, err = openUnnamed(b.dir)
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		if ok {
			fi, err := writeNew(f, hdr, body, sync)
			if err != nil {
				f.close()
				return nil, time.Time{}, err
			}
			return &temp{f: f, unnamed: true}, fi.mod, nil
		}
		b.noUnnamed.Store(true)
	}
	path := b.tempPath()
	mod, err := createFile(path, hdr, body, sync)
	if err != nil {
		os.Remove(path)
		return nil, time.Time{}, err
	}
	return &temp{path: path}, mod, nil
}

// Put implements bucket.Bucket. Under a bucket.SyncGroup, the object is
// written and renamed into place unsynced, and the group records the
// sync: one syncfs(2) of the bucket's file system for every put of the
// group where Linux offers one that reports failures, else an fsync of
// each file and of each directory a file was placed in. Under
// bucket.WithSyncFirst, where there is a syncfs, the object's temporary
// file is written unsynced and the group's sync (one syncfs) makes it
// durable with the group's objects before it is renamed into place.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	l, err := b.begin(ctx, "put", key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	group, first := bucket.SyncGroupOf(ctx), bucket.SyncFirstOf(ctx)
	h, hdr := encode(newToken(), body)
	// A grouped put's file is linked into place, so it may be unnamed
	// until then; one placed after the group's sync is renamed over the
	// object, so it has a name.
	tmp, mod, err := b.writeTemp(hdr, body, group == nil && (first == nil || b.syncFS == nil), group != nil && first == nil, l.parent(b.dir))
	if err != nil {
		return bucket.Attrs{}, opErr("put", key, err)
	}
	placed := false
	defer func() { tmp.discard(placed) }()
	if first != nil {
		if b.syncFS != nil {
			b.deferFS(first) // the temporary file's bytes, with the group's
		}
		if err := first.Sync(ctx); err != nil {
			return bucket.Attrs{}, opErr("put", key, fmt.Errorf("%w: sync before placing: %w", bucket.ErrUnavailable, err))
		}
	}
	if err := ctx.Err(); err != nil {
		return bucket.Attrs{}, opErr("put", key, err)
	}
	unlock, err := b.lockKey(ctx, key)
	if err != nil {
		return bucket.Attrs{}, opErr("put", key, err)
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return bucket.Attrs{}, opErr("put", key, err)
	}
	if err := b.check("put", key, l, cond); err != nil {
		return bucket.Attrs{}, err
	}
	err = b.place(ctx, tmp, l, group != nil)
	if errors.Is(err, errPresent) {
		// An object is there: another writer's, durable or about to be.
		// An unsynced file never replaces one, or that writer's head
		// could refer to bytes a crash tears. (Or the file system makes
		// no hard links: the file is synced and renamed, as outside a
		// group.)
		if tmp.unnamed {
			// Written anew, named and synced: an unnamed file cannot be
			// renamed, and one the file system would not link may be
			// the first of many.
			if _, serr := os.Lstat(l.path); notExist(serr) {
				b.noUnnamed.Store(true)
			}
			tmp.discard(false)
			var named *temp
			var m time.Time
			if named, m, err = b.writeTemp(hdr, body, true, false, ""); err == nil {
				tmp, mod = named, m
			}
		} else {
			err = syncFile(tmp.path)
			b.fileSyncs.Add(1)
		}
		if err == nil {
			err = b.place(ctx, tmp, l, false)
		}
	}
	if err != nil {
		return bucket.Attrs{}, opErr("put", key, err)
	}
	placed = true
	if group != nil {
		b.deferSync(group, l)
	} else if err := b.syncDir(l.parent(b.dir)); err != nil {
		return bucket.Attrs{}, opErr("put", key, fmt.Errorf("%w: written but not synced: %w", bucket.ErrAmbiguous, err))
	}
	return bucket.Attrs{Key: key, Size: h.size, Version: h.version(), ModTime: mod, Checksum: h.checksum()}, nil
}

// deferSync records in g what makes the object placed at l durable: one
// sync of the whole file system for all the group's puts where the
// bucket has one, else an fsync of the file and one of its directory.
func (b *Bucket) deferSync(g *bucket.SyncGroup, l location) {
	if b.syncFS != nil {
		b.deferFS(g)
		return
	}
	path, parent := l.path, l.parent(b.dir)
	g.Defer("file "+path, func(context.Context) error {
		b.fileSyncs.Add(1)
		return syncFile(path)
	})
	g.Defer("directory "+parent, func(context.Context) error {
		return b.syncDir(parent)
	})
}

// deferFS records in g one sync of the bucket's whole file system.
func (b *Bucket) deferFS(g *bucket.SyncGroup) {
	g.Defer("file system "+b.dir, func(context.Context) error {
		b.fsSyncs.Add(1)
		return b.syncFS(b.dir)
	})
}

// place renames the temporary file tmp to l.path, creating l's directories
// if needed. Renames into existing directories hold the directory lock
// shared; creating directories holds it exclusively and syncs every new
// directory into its parent before anyone else can see it, so that a
// directory a writer finds is always durable. With noReplace, tmp takes
// l.path only if nothing is there, else place returns errPresent.
func (b *Bucket) place(ctx context.Context, tmp *temp, l location, noReplace bool) error {
	move := func(path string) error { return os.Rename(tmp.path, path) }
	switch {
	case tmp.unnamed:
		// Only ever linked: a put that must rename writes a named file.
		move = func(path string) error { return linkIfAbsent(tmp.f, path) }
	case noReplace:
		move = func(path string) error { return moveIfAbsent(tmp.path, path) }
	}
	if len(l.dirs) == 0 {
		return move(l.path)
	}
	unlock, err := b.lockTree(ctx, false)
	if err != nil {
		return err
	}
	err = move(l.path)
	unlock()
	if err == nil || !notExist(err) {
		return err
	}
	unlock, err = b.lockTree(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	created, err := b.mkdirs(l.dirs)
	if err != nil {
		return err
	}
	if err := move(l.path); err != nil {
		removeDirs(created)
		return err
	}
	return nil
}

// errPresent is place's answer, with noReplace, when it cannot give the
// file the name unsynced: an object is at the path already, or the file
// system makes no hard links.
var errPresent = errors.New("an object is already there, or the file system makes no hard links")

// link is os.Link, and linkFD names an unnamed file; tests replace them.
var (
	link   = os.Link
	linkFD = rawFile.linkAt
)

// moveIfAbsent moves the file at tmp to path if nothing is at path,
// atomically (a hard link fails if the name exists), else returns
// errPresent. A missing directory is reported as it is, for place to
// make it.
func moveIfAbsent(tmp, path string) error {
	if err := link(tmp, path); err != nil {
		if notExist(err) {
			return err
		}
		return errPresent // the name is taken, or there are no hard links here
	}
	os.Remove(tmp) // once linked, a temporary name left over is only cairn gc's to remove
	return nil
}

// linkIfAbsent is moveIfAbsent for an unnamed file.
func linkIfAbsent(f rawFile, path string) error {
	if err := linkFD(f, path); err != nil {
		if notExist(err) {
			return err
		}
		return errPresent
	}
	return nil
}

// mkdirs creates the missing directories of dirs, outermost first, and
// syncs each new one into its parent. On failure it removes what it made.
// The caller holds the directory lock exclusively.
func (b *Bucket) mkdirs(dirs []string) ([]string, error) {
	var created []string
	for i, d := range dirs {
		err := os.Mkdir(d, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			created = append(created, d)
			parent := b.dir
			if i > 0 {
				parent = dirs[i-1]
			}
			if err = b.syncDir(parent); err != nil {
				err = fmt.Errorf("sync %s: %w", parent, err)
			}
		}
		if err != nil {
			removeDirs(created)
			return nil, err
		}
	}
	return created, nil
}

// removeDirs removes directories innermost first, best effort.
func removeDirs(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		if rmdir(dirs[i]) != nil {
			return
		}
	}
}

// Delete implements bucket.Bucket. IfVersion is supported.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	l, err := b.begin(ctx, "delete", key)
	if err != nil {
		return err
	}
	if cond.IsAbsent() {
		return opErr("delete", key, fmt.Errorf("if-absent: %w", bucket.ErrUnsupported))
	}
	removed, err := b.remove(ctx, key, l, cond)
	if removed {
		b.prune(ctx, l)
	}
	return err
}

// remove deletes the object under its stripe lock. removed reports whether
// the file is gone from its directory, even when the directory could not
// be synced.
func (b *Bucket) remove(ctx context.Context, key string, l location, cond bucket.Condition) (removed bool, err error) {
	unlock, err := b.lockKey(ctx, key)
	if err != nil {
		return false, opErr("delete", key, err)
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return false, opErr("delete", key, err)
	}
	if err := b.check("delete", key, l, cond); err != nil {
		return false, err
	}
	if len(l.dirs) > 0 {
		// Hold the directory lock shared from the unlink to the sync, so
		// that no other delete's prune removes the directory in between.
		unlockTree, err := b.lockTree(ctx, false)
		if err != nil {
			return false, opErr("delete", key, err)
		}
		defer unlockTree()
	}
	if err := os.Remove(l.path); err != nil {
		if !notExist(err) {
			return false, opErr("delete", key, err)
		}
		if _, conditional := cond.Version(); conditional {
			return false, opErr("delete", key, fmt.Errorf("%w: object does not exist", bucket.ErrPrecondition))
		}
		return false, nil
	}
	if err := b.syncDir(l.parent(b.dir)); err != nil {
		return true, opErr("delete", key, fmt.Errorf("%w: removed but not synced: %w", bucket.ErrAmbiguous, err))
	}
	return true, nil
}

// prune removes the key's directories that its deletion left empty, best
// effort, holding the directory lock exclusively so that no rename is
// under way into them.
func (b *Bucket) prune(ctx context.Context, l location) {
	if len(l.dirs) == 0 || !emptyDir(l.dirs[len(l.dirs)-1]) {
		return
	}
	unlock, err := b.lockTree(ctx, true)
	if err != nil {
		return
	}
	defer unlock()
	removeDirs(l.dirs)
}

func emptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return err == io.EOF
}

// Capabilities implements bucket.Bucket.
func (b *Bucket) Capabilities() bucket.Capabilities {
	return bucket.Capabilities{ConditionalDelete: true, SyncsGroupFirst: b.syncFS != nil}
}

// Close implements bucket.Bucket. Between calls the bucket holds only its
// lock files open; Close makes later calls fail and closes each lock
// file, at once or when the last hold in flight ends (it never waits).
func (b *Bucket) Close() error {
	b.closed.Store(true)
	for i := range b.locks {
		b.locks[i].close()
	}
	return nil
}
