package file_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
)

func newBucket(t *testing.T) (*file.Bucket, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b, dir
}

func TestConformanceRoot(t *testing.T) {
	conformancetest.RunBucketSuite(t, func(context.Context) (bucket.Bucket, error) {
		return file.New(t.TempDir())
	}, conformance.BucketOptions{})
}

// TestConformancePrefix opens each bucket through its URL and keeps the
// keys under a prefix.
func TestConformancePrefix(t *testing.T) {
	conformancetest.RunBucketSuite(t, func(ctx context.Context) (bucket.Bucket, error) {
		b, err := bucket.Open(ctx, "file://"+t.TempDir())
		if err != nil {
			return nil, err
		}
		return closeBoth{must(bucket.WithPrefix(b, "some/prefix/")), b}, nil
	}, conformance.BucketOptions{})
}

// closeBoth closes the wrapped bucket with its prefix view.
type closeBoth struct {
	bucket.Bucket
	inner bucket.Bucket
}

func (c closeBoth) Close() error { c.Bucket.Close(); return c.inner.Close() }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, sub := range []string{"sub", "with space"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"file://" + dir, "file://localhost" + dir + "/sub", "file://" + dir + "/with%20space"} {
		b, err := bucket.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if _, err := b.Put(ctx, "k", []byte("v"), bucket.Unconditional); err != nil {
			t.Fatalf("put through %q: %v", u, err)
		}
		b.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "with space", "ok")); err != nil {
		t.Errorf("escaped URL path did not name the directory: %v", err)
	}
	for _, u := range []string{"file://relative", "file://relative/path", "file:relative", "file://" + dir + "?x=1", "file://" + dir + "?x", "file://user@localhost" + dir, "file://otherhost" + dir, "file://" + dir + "#frag"} {
		if b, err := bucket.Open(ctx, u); err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}

func TestCreateMakesDirectoryAndRefusesFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "c")
	if _, err := file.Create(dir); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("bucket directory not created: %v", err)
	}
	f := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) (*file.Bucket, error){file.New, file.Create} {
		if _, err := open(f); err == nil {
			t.Fatal("opening a regular file as a bucket succeeded")
		}
	}
}

// TestOpenNeverCreates: New and a file:// URL open a directory that exists
// and nothing else; a missing one is ErrNoBucket and stays missing.
func TestOpenNeverCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing", "bucket")
	if _, err := file.New(dir); !errors.Is(err, bucket.ErrNoBucket) {
		t.Fatalf("New of a missing directory: %v, want ErrNoBucket", err)
	}
	if _, err := bucket.Open(context.Background(), "file://"+dir); !errors.Is(err, bucket.ErrNoBucket) {
		t.Fatalf("Open of a missing directory: %v, want ErrNoBucket", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("opening created %s: %v", filepath.Dir(dir), err)
	}
}

// TestOpenRefusesRoot: the root of the file system is never a bucket,
// however it is named.
func TestOpenRefusesRoot(t *testing.T) {
	for _, u := range []string{"file:///", "file://localhost/", "file:///./", "file:///tmp/.."} {
		if b, err := bucket.Open(context.Background(), u); err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded", u)
		}
	}
	for _, open := range []func(string) (*file.Bucket, error){file.New, file.Create} {
		if b, err := open("/"); err == nil {
			b.Close()
			t.Error("opening / as a bucket succeeded")
		}
	}
}

// TestOpenStaysInNamedDirectory: a URL's path is decoded once, and a dot
// segment, encoded or not, is refused instead of leading out of the
// directory the URL names.
func TestOpenStaysInNamedDirectory(t *testing.T) {
	parent := t.TempDir()
	named := filepath.Join(parent, "named")
	if err := os.Mkdir(named, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		"file://" + named + "/..%2F",
		"file://" + named + "/..%2f",
		"file://" + named + "/%2E%2E",
		"file://" + named + "/../named",
		"file://" + named + "/./",
		"file://" + named + "%2F..",
	} {
		b, err := bucket.Open(context.Background(), u)
		if err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded", u)
		}
	}
	if ents, err := os.ReadDir(parent); err != nil || len(ents) != 1 {
		t.Fatalf("the parent directory changed: %v, %v", ents, err)
	}
}

// TestLayout pins the documented key-to-file mapping.
func TestLayout(t *testing.T) {
	ctx := context.Background()
	b, dir := newBucket(t)
	files := map[string]string{
		"a":         "oa",
		"a/b":       "da/ob",
		"a//b":      "da/d/ob",
		"./..":      "d./o..",
		"b/":        "db/o",
		"sp ace/%":  "dsp%20ace/o%25",
		"é":         "o%C3%A9",
		"A.b_c-9":   "oA.b_c-9",
		".locks":    "o.locks",
		".tmp-oops": "o.tmp-oops",
	}
	for k := range files {
		if _, err := b.Put(ctx, k, []byte("body of "+k), bucket.IfAbsent()); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	var keys []string
	for k, f := range files {
		keys = append(keys, k)
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("key %q: want file %s: %v", k, f, err)
		}
		got, _, err := b.Get(ctx, k)
		if err != nil || string(got) != "body of "+k {
			t.Errorf("get %q = %q, %v", k, got, err)
		}
	}
	slices.Sort(keys)
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Key)
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("list = %q, want %q", got, keys)
	}
}

func TestSegmentLimit(t *testing.T) {
	ctx := context.Background()
	b, _ := newBucket(t)
	ok := []string{strings.Repeat("x", 254), "d/" + strings.Repeat("x", 254) + "/e", strings.Repeat("%", 84)}
	bad := []string{strings.Repeat("x", 255), strings.Repeat("x", 255) + "/e", strings.Repeat("%", 85), "a/" + strings.Repeat("é", 43)}
	for _, k := range ok {
		if _, err := b.Put(ctx, k, []byte("v"), bucket.Unconditional); err != nil {
			t.Errorf("put %d-byte key: %v", len(k), err)
		}
	}
	for _, k := range bad {
		_, err := b.Put(ctx, k, []byte("v"), bucket.Unconditional)
		if !errors.Is(err, bucket.ErrInvalidKey) || !strings.Contains(err.Error(), "file name") {
			t.Errorf("put %d-byte key: %v, want ErrInvalidKey naming the file name limit", len(k), err)
		}
		if _, _, err := b.Get(ctx, k); !errors.Is(err, bucket.ErrInvalidKey) {
			t.Errorf("get %d-byte key: %v, want ErrInvalidKey", len(k), err)
		}
	}
	// A prefix no key can have lists nothing, without error.
	page, err := b.List(ctx, bucket.ListOptions{Prefix: strings.Repeat("x", 300) + "/"})
	if err != nil || len(page.Objects) != 0 {
		t.Fatalf("list impossible prefix = %+v, %v", page, err)
	}
}

func TestVersionsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	b1, dir := newBucket(t)
	keys := []string{"head", "x/y/z", "x/w"}
	put := map[string]bucket.Attrs{}
	for _, k := range keys {
		a, err := b1.Put(ctx, k, []byte("v1 "+k), bucket.IfAbsent())
		if err != nil {
			t.Fatal(err)
		}
		put[k] = a
	}
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		_, g, err := b2.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		s, err := b2.Stat(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []bucket.Attrs{g, s} {
			if !a.ModTime.Equal(put[k].ModTime) {
				t.Errorf("%q: modtime %v after reopen, put said %v", k, a.ModTime, put[k].ModTime)
			}
			a.ModTime = put[k].ModTime
			if a != put[k] {
				t.Errorf("%q: attrs %+v after reopen, put said %+v", k, a, put[k])
			}
		}
	}
	objs, _, err := bucket.ListAll(ctx, b2, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Version != put[o.Key].Version || o.Checksum != put[o.Key].Checksum {
			t.Errorf("list after reopen: %+v, put said %+v", o, put[o.Key])
		}
	}
	if _, err := b2.Put(ctx, "head", []byte("v2"), bucket.IfVersion(put["head"].Version)); err != nil {
		t.Fatalf("replace with the version from before reopening: %v", err)
	}
	if _, err := b2.Put(ctx, "head", []byte("v3"), bucket.IfVersion(put["head"].Version)); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("replace with a stale version: %v, want ErrPrecondition", err)
	}
	// A recreated object never gets an old version back.
	seen := map[bucket.Version]bool{}
	for range 20 {
		a, err := b2.Put(ctx, "again", []byte("same bytes"), bucket.IfAbsent())
		if err != nil {
			t.Fatal(err)
		}
		if seen[a.Version] {
			t.Fatalf("version %s reused", a.Version)
		}
		seen[a.Version] = true
		if err := b2.Delete(ctx, "again", bucket.IfVersion(a.Version)); err != nil {
			t.Fatal(err)
		}
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(data))
	}
	data[off] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCorruption(t *testing.T) {
	ctx := context.Background()
	b, dir := newBucket(t)
	for _, k := range []string{"c/body", "c/header", "c/short"} {
		if _, err := b.Put(ctx, k, []byte("some bytes worth keeping"), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	flipByte(t, filepath.Join(dir, "dc", "obody"), -1)
	flipByte(t, filepath.Join(dir, "dc", "oheader"), 14) // inside the version token
	if err := os.Truncate(filepath.Join(dir, "dc", "oshort"), 50); err != nil {
		t.Fatal(err)
	}

	// A damaged body: Get fails; Stat reads only the header and still works.
	if body, a, err := b.Get(ctx, "c/body"); !errors.Is(err, bucket.ErrIntegrity) || body != nil || a != (bucket.Attrs{}) {
		t.Errorf("get damaged body = %q, %+v, %v; want ErrIntegrity", body, a, err)
	}
	if _, err := b.Stat(ctx, "c/body"); err != nil {
		t.Errorf("stat damaged body: %v (stat reads only the header)", err)
	}
	for _, k := range []string{"c/header", "c/short"} {
		if _, _, err := b.Get(ctx, k); !errors.Is(err, bucket.ErrIntegrity) {
			t.Errorf("get %q: %v, want ErrIntegrity", k, err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, bucket.ErrIntegrity) {
			t.Errorf("stat %q: %v, want ErrIntegrity", k, err)
		}
	}
	if _, err := b.List(ctx, bucket.ListOptions{Prefix: "c/"}); !errors.Is(err, bucket.ErrIntegrity) {
		t.Errorf("list over a damaged header: %v, want ErrIntegrity", err)
	}
	if _, err := b.Put(ctx, "c/header", []byte("x"), bucket.IfVersion("00")); !errors.Is(err, bucket.ErrIntegrity) {
		t.Errorf("replace-if-version over a damaged header: %v, want ErrIntegrity", err)
	}
	// An unconditional write repairs the object.
	if _, err := b.Put(ctx, "c/header", []byte("fresh"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if got, _, err := b.Get(ctx, "c/header"); err != nil || string(got) != "fresh" {
		t.Fatalf("get after rewrite = %q, %v", got, err)
	}
}

// TestChecksum checks that Checksum is the body's CRC-32C and agrees
// across Put, Get, Stat and List.
func TestChecksum(t *testing.T) {
	ctx := context.Background()
	b, _ := newBucket(t)
	p, err := b.Put(ctx, "k", []byte("123456789"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Checksum, "crc32c:e3069283"; got != want { // the CRC-32C check value
		t.Fatalf("checksum %q, want %q", got, want)
	}
	_, g, _ := b.Get(ctx, "k")
	s, _ := b.Stat(ctx, "k")
	page, _ := b.List(ctx, bucket.ListOptions{})
	for _, a := range []bucket.Attrs{g, s, page.Objects[0]} {
		if a != p {
			t.Errorf("attrs %+v, put said %+v", a, p)
		}
	}
}

// TestInternalAndForeignFilesInvisible: temporary files, lock files,
// empty directories and files that are not the adapter's never show up as
// objects; RemoveTemps removes the temporary files older than it is told
// (a dry run only counts them), and opening a bucket removes nothing.
func TestInternalAndForeignFilesInvisible(t *testing.T) {
	ctx := context.Background()
	b, dir := newBucket(t)
	if _, err := b.Put(ctx, "real/one", []byte("x"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale, fresh := write(".tmp-stale"), write(".tmp-fresh")
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"junk", "o%zz", "o%61", "oa b", "dreal/x", "o"} {
		if n == "dreal/x" {
			write(filepath.Join("dreal", "x"))
			continue
		}
		write(n)
	}
	for _, d := range []string{"dempty", "oisdir", filepath.Join("dreal", "dnested")} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b2, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("opening removed a temporary file: %v", err)
	}
	if n, err := b2.RemoveTemps(ctx, time.Hour, true); err != nil || n != 1 {
		t.Errorf("dry run: %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("a dry run removed a temporary file: %v", err)
	}
	if n, err := b2.RemoveTemps(ctx, time.Hour, false); err != nil || n != 1 {
		t.Errorf("removed %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temporary file removed: %v", err)
	}
	objs, prefixes, err := bucket.ListAll(ctx, b2, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Key != "real/one" || len(prefixes) != 0 {
		t.Fatalf("list = %+v %q, want only real/one", objs, prefixes)
	}
	if _, err := b2.Stat(ctx, "isdir"); err == nil {
		t.Fatal("stat of a directory in place of an object succeeded")
	}
}

func TestDeletePrunesEmptyDirectories(t *testing.T) {
	ctx := context.Background()
	b, dir := newBucket(t)
	for _, k := range []string{"a/b/c/d", "a/x"} {
		if _, err := b.Put(ctx, k, []byte("v"), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, "a/b/c/d", bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "da", "db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty directories kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "da", "ox")); err != nil {
		t.Errorf("sibling lost: %v", err)
	}
	if _, err := b.Put(ctx, "a/b/c/d", []byte("again"), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
}

// TestPutDeleteSameDirectory races writers and deleters of different keys
// in one directory, which keeps being removed and recreated under them.
func TestPutDeleteSameDirectory(t *testing.T) {
	ctx := context.Background()
	b, _ := newBucket(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			key := fmt.Sprintf("shared/dir/%d", g)
			for i := range 40 {
				body := fmt.Sprintf("%d-%d", g, i)
				a, err := b.Put(ctx, key, []byte(body), bucket.IfAbsent())
				if err != nil {
					errs <- fmt.Errorf("put %s round %d: %w", key, i, err)
					return
				}
				if got, _, err := b.Get(ctx, key); err != nil || string(got) != body {
					errs <- fmt.Errorf("get %s round %d = %q, %v", key, i, got, err)
					return
				}
				if err := b.Delete(ctx, key, bucket.IfVersion(a.Version)); err != nil {
					errs <- fmt.Errorf("delete %s round %d: %w", key, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	b, _ := newBucket(t)
	if _, err := b.Put(ctx, "k", []byte("v"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, _, err := b.Get(ctx, "k"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("get after close: %v", err)
	}
	if _, err := b.Put(ctx, "k", nil, bucket.Unconditional); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("put after close: %v", err)
	}
	if err := b.Delete(ctx, "k", bucket.Unconditional); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("delete after close: %v", err)
	}
	if _, err := b.List(ctx, bucket.ListOptions{}); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("list after close: %v", err)
	}
}

func TestDeleteIfAbsentUnsupported(t *testing.T) {
	ctx := context.Background()
	b, _ := newBucket(t)
	if _, err := b.Put(ctx, "k", []byte("v"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "k", bucket.IfAbsent()); !errors.Is(err, bucket.ErrUnsupported) {
		t.Fatalf("delete if-absent: %v, want ErrUnsupported", err)
	}
	if _, err := b.Stat(ctx, "k"); err != nil {
		t.Fatalf("refused delete removed the object: %v", err)
	}
}

// --- several processes racing on one directory ---

const (
	raceDirEnv = "CAIRN_FILE_RACE_DIR" // set in child processes: the bucket directory
	raceIDEnv  = "CAIRN_FILE_RACE_ID"
)

// raceReport is a child's outcome of one round.
type raceReport struct {
	Round      int
	Child      int
	Create     string // "won", "lost" or an error
	CreateVer  bucket.Version
	Replace    string
	ReplaceVer bucket.Version
}

func outcome(a bucket.Attrs, err error) (string, bucket.Version) {
	switch {
	case err == nil:
		return "won", a.Version
	case errors.Is(err, bucket.ErrPrecondition):
		return "lost", ""
	}
	return "error: " + err.Error(), ""
}

func bodyOf(kind string, child, round int) []byte {
	return fmt.Appendf(nil, "%s by child %d in round %d", kind, child, round)
}

// raceChild serves rounds read from stdin: "ROUND VERSION START_UNIX_NANO".
// At START it races a create-only write of create/ROUND and a replace of
// "cas" from VERSION, then reports on stdout.
func raceChild(dir string) {
	id, _ := strconv.Atoi(os.Getenv(raceIDEnv))
	b, err := file.New(dir)
	if err != nil {
		fmt.Println("RACE-FATAL", err)
		return
	}
	ctx := context.Background()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var round int
		var version string
		var start int64
		if _, err := fmt.Sscan(sc.Text(), &round, &version, &start); err != nil {
			fmt.Println("RACE-FATAL", err)
			return
		}
		time.Sleep(time.Until(time.Unix(0, start)))
		r := raceReport{Round: round, Child: id}
		r.Create, r.CreateVer = outcome(b.Put(ctx, fmt.Sprintf("create/%d", round), bodyOf("create", id, round), bucket.IfAbsent()))
		r.Replace, r.ReplaceVer = outcome(b.Put(ctx, "cas", bodyOf("replace", id, round), bucket.IfVersion(bucket.Version(version))))
		line, _ := json.Marshal(r)
		fmt.Printf("RACE %s\n", line)
	}
}

func TestMultiProcessRace(t *testing.T) {
	if dir := os.Getenv(raceDirEnv); dir != "" {
		raceChild(dir)
		return
	}
	const children, rounds = 4, 10
	ctx := context.Background()
	b, dir := newBucket(t)

	type child struct {
		cmd    *exec.Cmd
		stdin  interface{ Write([]byte) (int, error) }
		stderr bytes.Buffer
	}
	reports := make(chan raceReport, children*rounds)
	fatal := make(chan string, children)
	kids := make([]*child, children)
	for i := range kids {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestMultiProcessRace$", "-test.timeout=60s")}
		c.cmd.Env = append(os.Environ(), raceDirEnv+"="+dir, raceIDEnv+"="+strconv.Itoa(i))
		c.cmd.Stderr = &c.stderr
		in, err := c.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.stdin = in
		kids[i] = c
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "RACE "):
					var r raceReport
					if err := json.Unmarshal([]byte(line[5:]), &r); err != nil {
						fatal <- fmt.Sprintf("child %d: %v", i, err)
						return
					}
					reports <- r
				case strings.HasPrefix(line, "RACE-FATAL"):
					fatal <- fmt.Sprintf("child %d: %s", i, line)
				}
			}
		}()
		defer func() {
			in.Close()
			if err := c.cmd.Wait(); err != nil {
				t.Errorf("child %d: %v\n%s", i, err, c.stderr.String())
			}
		}()
	}

	for round := range rounds {
		base, err := b.Put(ctx, "cas", []byte(fmt.Sprintf("base of round %d", round)), bucket.Unconditional)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now().Add(50 * time.Millisecond).UnixNano()
		for _, c := range kids {
			if _, err := fmt.Fprintf(c.stdin, "%d %s %d\n", round, base.Version, start); err != nil {
				t.Fatal(err)
			}
		}
		var got []raceReport
		for len(got) < children {
			select {
			case r := <-reports:
				if r.Round != round {
					t.Fatalf("report for round %d during round %d", r.Round, round)
				}
				got = append(got, r)
			case msg := <-fatal:
				t.Fatal(msg)
			case <-time.After(15 * time.Second):
				t.Fatalf("round %d: %d of %d children reported", round, len(got), children)
			}
		}
		checkRound(t, b, round, "create", fmt.Sprintf("create/%d", round), got,
			func(r raceReport) (string, bucket.Version) { return r.Create, r.CreateVer })
		checkRound(t, b, round, "replace", "cas", got,
			func(r raceReport) (string, bucket.Version) { return r.Replace, r.ReplaceVer })
	}
}

// checkRound asserts exactly one winner whose bytes and version are stored.
func checkRound(t *testing.T, b bucket.Bucket, round int, kind, key string, rs []raceReport, pick func(raceReport) (string, bucket.Version)) {
	t.Helper()
	winner, version := -1, bucket.Version("")
	for _, r := range rs {
		res, v := pick(r)
		switch res {
		case "won":
			if winner >= 0 {
				t.Fatalf("round %d %s: children %d and %d both won", round, kind, winner, r.Child)
			}
			winner, version = r.Child, v
		case "lost":
		default:
			t.Fatalf("round %d %s: child %d: %s", round, kind, r.Child, res)
		}
	}
	if winner < 0 {
		t.Fatalf("round %d %s: nobody won", round, kind)
	}
	body, a, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if want := bodyOf(kind, winner, round); !bytes.Equal(body, want) || a.Version != version {
		t.Fatalf("round %d %s: stored %q version %s, winner %d wrote %q version %s", round, kind, body, a.Version, winner, want, version)
	}
}

// tree lists every path under dir with its size and contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadingWritesNothing: opening a bucket and reading it (Get, Stat,
// List, a missing key included) leave its directory exactly as it was:
// no lock directory, no lock file. The first write makes them.
func TestReadingWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".locks")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("opening made the lock directory: %v", err)
	}
	if _, err := w.Put(ctx, "a/b", []byte("x"), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".locks")); err != nil {
		t.Fatalf("the first write made no lock directory: %v", err)
	}
	os.RemoveAll(filepath.Join(dir, ".locks")) // as a directory copied without it
	before := tree(t, dir)
	r, err := bucket.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Stat(ctx, "a/missing"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatal(err)
	}
	if _, _, err := bucket.ListAll(ctx, r, bucket.ListOptions{Delimiter: "/"}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	after := tree(t, dir)
	if len(before) != len(after) {
		t.Fatalf("reading changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	for p, v := range before {
		if after[p] != v {
			t.Fatalf("reading changed %s", p)
		}
	}
	// A write on a directory without the lock directory makes it again.
	if _, err := w.Put(ctx, "c", []byte("y"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
}

// TestSyncsCounted: a put of a new object fsyncs its file once and at
// least its directory; a read fsyncs nothing.
func TestSyncsCounted(t *testing.T) {
	b, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f0, d0 := b.Syncs()
	if _, err := b.Put(ctx, "a/b/c", []byte("x"), bucket.Condition{}); err != nil {
		t.Fatal(err)
	}
	f1, d1 := b.Syncs()
	if f1-f0 != 1 || d1-d0 < 1 {
		t.Fatalf("a put fsynced %d files and %d directories", f1-f0, d1-d0)
	}
	if _, _, err := b.Get(ctx, "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if f2, d2 := b.Syncs(); f2 != f1 || d2 != d1 {
		t.Fatalf("a read fsynced %d files and %d directories", f2-f1, d2-d1)
	}
}
