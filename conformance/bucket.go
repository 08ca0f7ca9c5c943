package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cairnstore/cairn/bucket"
)

// NewBucketFunc returns a fresh, empty bucket for one check.
type NewBucketFunc func(ctx context.Context) (bucket.Bucket, error)

// BucketOptions adjust the bucket suite to a backend.
type BucketOptions struct {
	// KnownGaps maps a check's name to why this backend cannot honour it.
	KnownGaps map[string]string
}

// BucketCheck is one behaviour of the Bucket port.
type BucketCheck struct {
	Name string
	Run  func(ctx context.Context, b bucket.Bucket) error
}

// Result is how a check ended.
type Result string

const (
	Pass     Result = "pass"
	Fail     Result = "fail"
	KnownGap Result = "known gap"
)

// Outcome is the result of one check.
type Outcome struct {
	Name   string
	Result Result
	Detail string // the failure, or the declared reason of a known gap
}

// BucketChecks returns the bucket suite's checks in a fixed order.
func BucketChecks() []BucketCheck {
	return []BucketCheck{
		{"round-trip", checkRoundTrip},
		{"empty-object", checkEmptyObject},
		{"missing-keys", checkMissingKeys},
		{"overwrite", checkOverwrite},
		{"create-only-twice", checkCreateOnlyTwice},
		{"replace-if-version", checkReplaceIfVersion},
		{"delete-recreate", checkDeleteRecreate},
		{"conditional-delete", checkConditionalDelete},
		{"versions-consistent", checkVersionsConsistent},
		{"list-order", checkListOrder},
		{"key-and-prefix-coexist", checkKeyAndPrefixCoexist},
		{"list-prefix", checkListPrefix},
		{"list-delimiter", checkListDelimiter},
		{"list-start-after", checkListStartAfter},
		{"list-paging", checkListPaging},
		{"read-after-write", checkReadAfterWrite},
		{"list-after-write", checkListAfterWrite},
		{"concurrent-create", checkConcurrentCreate},
		{"concurrent-replace", checkConcurrentReplace},
		{"invalid-keys", checkInvalidKeys},
		{"long-key", checkLongKey},
		{"cancelled-context", checkCancelledContext},
		{"big-object", checkBigObject},
		{"zero-values", checkZeroValues},
	}
}

// RunCheck runs one check on a fresh bucket from newBucket and classifies
// the result: a failure is a known gap when opts.KnownGaps or the bucket's
// Capabilities.KnownGaps declare one for the check.
func RunCheck(ctx context.Context, c BucketCheck, newBucket NewBucketFunc, opts BucketOptions) Outcome {
	b, err := newBucket(ctx)
	if err != nil {
		return Outcome{c.Name, Fail, "new bucket: " + err.Error()}
	}
	defer b.Close()
	err = c.Run(ctx, b)
	if err == nil {
		return Outcome{c.Name, Pass, ""}
	}
	reason, declared := opts.KnownGaps[c.Name]
	if !declared {
		reason, declared = b.Capabilities().KnownGaps[c.Name]
	}
	if declared {
		return Outcome{c.Name, KnownGap, fmt.Sprintf("%s (observed: %v)", reason, err)}
	}
	return Outcome{c.Name, Fail, err.Error()}
}

// RunBucket runs every check, reporting each outcome as it ends, and
// returns the number of failures.
func RunBucket(ctx context.Context, newBucket NewBucketFunc, opts BucketOptions, report func(Outcome)) int {
	failed := 0
	for _, c := range BucketChecks() {
		o := RunCheck(ctx, c, newBucket, opts)
		if o.Result == Fail {
			failed++
		}
		report(o)
	}
	return failed
}

// --- helpers ---

func put(ctx context.Context, b bucket.Bucket, key, body string) (bucket.Attrs, error) {
	a, err := b.Put(ctx, key, []byte(body), bucket.Unconditional)
	if err != nil {
		return a, fmt.Errorf("put %q: %w", key, err)
	}
	return a, nil
}

func wantBody(ctx context.Context, b bucket.Bucket, key, want string) (bucket.Attrs, error) {
	got, a, err := b.Get(ctx, key)
	if err != nil {
		return a, fmt.Errorf("get %q: %w", key, err)
	}
	if string(got) != want {
		return a, fmt.Errorf("get %q = %q, want %q", key, trunc(got), trunc([]byte(want)))
	}
	return a, nil
}

func wantErr(what string, err, want error) error {
	if !errors.Is(err, want) {
		return fmt.Errorf("%s: got error %v, want %v", what, err, want)
	}
	return nil
}

func wantMissing(ctx context.Context, b bucket.Bucket, key string) error {
	_, err := b.Stat(ctx, key)
	return wantErr(fmt.Sprintf("stat %q", key), err, bucket.ErrNotExist)
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%s… (%d bytes)", b[:40], len(b))
	}
	return string(b)
}

func listKeys(ctx context.Context, b bucket.Bucket, opts bucket.ListOptions) ([]string, []string, error) {
	objs, prefixes, err := bucket.ListAll(ctx, b, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("list %+v: %w", opts, err)
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys, prefixes, nil
}

func wantList(what string, got, want []string) error {
	if len(got) == 0 && len(want) == 0 {
		return nil
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s = %q, want %q", what, got, want)
	}
	return nil
}

// --- checks ---

func checkRoundTrip(ctx context.Context, b bucket.Bucket) error {
	body := "hello, cairn\x00\xff binary"
	a, err := put(ctx, b, "dir/obj", body)
	if err != nil {
		return err
	}
	if a.Key != "dir/obj" || a.Size != int64(len(body)) || a.Version == "" {
		return fmt.Errorf("put attrs = %+v, want key dir/obj, size %d, a version", a, len(body))
	}
	g, err := wantBody(ctx, b, "dir/obj", body)
	if err != nil {
		return err
	}
	s, err := b.Stat(ctx, "dir/obj")
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	for _, x := range []bucket.Attrs{g, s} {
		if x.Key != a.Key || x.Size != a.Size || x.Version != a.Version {
			return fmt.Errorf("attrs %+v differ from put's %+v", x, a)
		}
		if x.ModTime.IsZero() {
			return fmt.Errorf("attrs %+v: no modification time", x)
		}
	}
	if g.Checksum != s.Checksum {
		return fmt.Errorf("checksum from get %q differs from stat %q", g.Checksum, s.Checksum)
	}
	return nil
}

func checkEmptyObject(ctx context.Context, b bucket.Bucket) error {
	a, err := put(ctx, b, "empty", "")
	if err != nil {
		return err
	}
	if a.Size != 0 {
		return fmt.Errorf("size %d, want 0", a.Size)
	}
	_, err = wantBody(ctx, b, "empty", "")
	return err
}

func checkMissingKeys(ctx context.Context, b bucket.Bucket) error {
	if _, _, err := b.Get(ctx, "nope"); !errors.Is(err, bucket.ErrNotExist) {
		return fmt.Errorf("get missing: %v, want ErrNotExist", err)
	}
	if err := wantMissing(ctx, b, "nope"); err != nil {
		return err
	}
	if err := b.Delete(ctx, "nope", bucket.Unconditional); err != nil {
		return fmt.Errorf("delete missing: %v, want nil", err)
	}
	_, err := b.Put(ctx, "nope", []byte("x"), bucket.IfVersion("1"))
	if err := wantErr("put if-version on missing", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	return wantMissing(ctx, b, "nope")
}

func checkOverwrite(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "k", "one")
	if err != nil {
		return err
	}
	a2, err := put(ctx, b, "k", "two")
	if err != nil {
		return err
	}
	if a1.Version == a2.Version {
		return fmt.Errorf("overwrite with other bytes kept version %q", a1.Version)
	}
	_, err = wantBody(ctx, b, "k", "two")
	return err
}

func checkCreateOnlyTwice(ctx context.Context, b bucket.Bucket) error {
	a, err := b.Put(ctx, "c", []byte("first"), bucket.IfAbsent())
	if err != nil {
		return fmt.Errorf("first create-only: %w", err)
	}
	_, err = b.Put(ctx, "c", []byte("second"), bucket.IfAbsent())
	if err := wantErr("second create-only", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	g, err := wantBody(ctx, b, "c", "first")
	if err != nil {
		return err
	}
	if g.Version != a.Version {
		return fmt.Errorf("version changed from %q to %q by a failed write", a.Version, g.Version)
	}
	return nil
}

func checkReplaceIfVersion(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "r", "v1")
	if err != nil {
		return err
	}
	a2, err := b.Put(ctx, "r", []byte("v2"), bucket.IfVersion(a1.Version))
	if err != nil {
		return fmt.Errorf("replace with current version: %w", err)
	}
	if a2.Version == a1.Version {
		return fmt.Errorf("replace kept version %q", a1.Version)
	}
	_, err = b.Put(ctx, "r", []byte("v3"), bucket.IfVersion(a1.Version))
	if err := wantErr("replace with stale version", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	g, err := wantBody(ctx, b, "r", "v2")
	if err != nil {
		return err
	}
	if g.Version != a2.Version {
		return fmt.Errorf("version %q after a failed replace, want %q", g.Version, a2.Version)
	}
	return nil
}

func checkDeleteRecreate(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "d", "before")
	if err != nil {
		return err
	}
	if err := b.Delete(ctx, "d", bucket.Unconditional); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if _, _, err := b.Get(ctx, "d"); !errors.Is(err, bucket.ErrNotExist) {
		return fmt.Errorf("get after delete: %v, want ErrNotExist", err)
	}
	a2, err := b.Put(ctx, "d", []byte("after"), bucket.IfAbsent())
	if err != nil {
		return fmt.Errorf("recreate create-only: %w", err)
	}
	if a2.Version == a1.Version {
		return fmt.Errorf("recreated object reuses version %q", a1.Version)
	}
	_, err = b.Put(ctx, "d", []byte("stale"), bucket.IfVersion(a1.Version))
	if err := wantErr("replace with the deleted object's version", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	_, err = wantBody(ctx, b, "d", "after")
	return err
}

func checkConditionalDelete(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "cd", "one")
	if err != nil {
		return err
	}
	a2, err := put(ctx, b, "cd", "two")
	if err != nil {
		return err
	}
	if !b.Capabilities().ConditionalDelete {
		err := b.Delete(ctx, "cd", bucket.IfVersion(a2.Version))
		if err := wantErr("conditional delete without the capability", err, bucket.ErrUnsupported); err != nil {
			return err
		}
		if _, err := wantBody(ctx, b, "cd", "two"); err != nil {
			return fmt.Errorf("refused conditional delete changed the object: %w", err)
		}
		return errors.New("adapter reports no conditional delete (refused cleanly)")
	}
	err = b.Delete(ctx, "cd", bucket.IfVersion(a1.Version))
	if err := wantErr("delete with stale version", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	if _, err := wantBody(ctx, b, "cd", "two"); err != nil {
		return fmt.Errorf("after a refused conditional delete: %w", err)
	}
	if err := b.Delete(ctx, "cd", bucket.IfVersion(a2.Version)); err != nil {
		return fmt.Errorf("delete with current version: %w", err)
	}
	if err := wantMissing(ctx, b, "cd"); err != nil {
		return err
	}
	// A conditional delete of a missing key leaves it missing; stores answer
	// it with success or a precondition failure, and the port allows both.
	if err := b.Delete(ctx, "cd", bucket.IfVersion(a2.Version)); err != nil && !errors.Is(err, bucket.ErrPrecondition) {
		return fmt.Errorf("conditional delete of a missing key: %w", err)
	}
	return wantMissing(ctx, b, "cd")
}

func checkVersionsConsistent(ctx context.Context, b bucket.Bucket) error {
	p, err := put(ctx, b, "v/x", "stable")
	if err != nil {
		return err
	}
	for i := range 2 {
		_, g, err := b.Get(ctx, "v/x")
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		s, err := b.Stat(ctx, "v/x")
		if err != nil {
			return fmt.Errorf("stat: %w", err)
		}
		objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: "v/"})
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if len(objs) != 1 {
			return fmt.Errorf("list returned %d objects, want 1", len(objs))
		}
		l := objs[0]
		for _, x := range []struct {
			op string
			a  bucket.Attrs
		}{{"get", g}, {"stat", s}, {"list", l}} {
			if x.a.Version != p.Version || x.a.Size != p.Size || x.a.Key != p.Key {
				return fmt.Errorf("read %d: %s attrs %+v, put gave %+v", i, x.op, x.a, p)
			}
		}
	}
	return nil
}

// listKeysFixture is a set of keys chosen to trip up ordering: bytes that
// sort differently as runes ("a-" < "a/" < "a0"), keys that are byte
// prefixes of others, multi-byte UTF-8, separators. No key is also the
// "directory" of another (see checkKeyAndPrefixCoexist), so stores that
// keep keys as files and directories can hold it.
var listKeysFixture = []string{
	"a/b", "a/c/d", "a/c/e", "a/cc", "a-", "a0", "b", "bb/x", "é", "z/é/1", "\u00ff", "\U0001F600", "A", "c",
}

func putKeys(ctx context.Context, b bucket.Bucket, keys []string) error {
	shuffled := slices.Clone(keys)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, k := range shuffled {
		if _, err := put(ctx, b, k, "body of "+k); err != nil {
			return err
		}
	}
	return nil
}

func sortedCopy(keys []string) []string {
	s := slices.Clone(keys)
	sort.Strings(s)
	return s
}

func checkListOrder(ctx context.Context, b bucket.Bucket) error {
	if err := putKeys(ctx, b, listKeysFixture); err != nil {
		return err
	}
	got, prefixes, err := listKeys(ctx, b, bucket.ListOptions{})
	if err != nil {
		return err
	}
	if len(prefixes) != 0 {
		return fmt.Errorf("list without delimiter returned prefixes %q", prefixes)
	}
	return wantList("list", got, sortedCopy(listKeysFixture))
}

// checkKeyAndPrefixCoexist: a key may also be the start of other keys ("a"
// and "a/b"), and a key may end in the delimiter and hold bytes ("b/").
func checkKeyAndPrefixCoexist(ctx context.Context, b bucket.Bucket) error {
	keys := []string{"a", "a/b", "b/", "b/x"}
	if err := putKeys(ctx, b, keys); err != nil {
		return err
	}
	got, _, err := listKeys(ctx, b, bucket.ListOptions{})
	if err != nil {
		return err
	}
	if err := wantList("list", got, keys); err != nil {
		return err
	}
	got, gotP, err := listKeys(ctx, b, bucket.ListOptions{Delimiter: "/"})
	if err != nil {
		return err
	}
	if err := wantList("objects with delimiter", got, []string{"a"}); err != nil {
		return err
	}
	if err := wantList("prefixes with delimiter", gotP, []string{"a/", "b/"}); err != nil {
		return err
	}
	got, _, err = listKeys(ctx, b, bucket.ListOptions{Prefix: "b/", Delimiter: "/"})
	if err != nil {
		return err
	}
	if err := wantList("objects under b/", got, []string{"b/", "b/x"}); err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := wantBody(ctx, b, k, "body of "+k); err != nil {
			return err
		}
	}
	return nil
}

func filterKeys(keys []string, keep func(string) bool) []string {
	var out []string
	for _, k := range sortedCopy(keys) {
		if keep(k) {
			out = append(out, k)
		}
	}
	return out
}

func checkListPrefix(ctx context.Context, b bucket.Bucket) error {
	if err := putKeys(ctx, b, listKeysFixture); err != nil {
		return err
	}
	for _, p := range []string{"a", "a/", "a/c", "bb/", "z", "zz", "é"} {
		got, _, err := listKeys(ctx, b, bucket.ListOptions{Prefix: p})
		if err != nil {
			return err
		}
		want := filterKeys(listKeysFixture, func(k string) bool { return strings.HasPrefix(k, p) })
		if err := wantList(fmt.Sprintf("list prefix %q", p), got, want); err != nil {
			return err
		}
	}
	return nil
}

// fold computes the expected delimiter listing of keys.
func fold(keys []string, prefix, delim, after string) (objs, prefixes []string) {
	seen := map[string]bool{}
	for _, k := range sortedCopy(keys) {
		if !strings.HasPrefix(k, prefix) || k <= after {
			continue
		}
		rest := k[len(prefix):]
		if i := strings.Index(rest, delim); i >= 0 {
			p := prefix + rest[:i+len(delim)]
			if !seen[p] {
				seen[p] = true
				prefixes = append(prefixes, p)
			}
			continue
		}
		objs = append(objs, k)
	}
	return objs, prefixes
}

func checkListDelimiter(ctx context.Context, b bucket.Bucket) error {
	if err := putKeys(ctx, b, listKeysFixture); err != nil {
		return err
	}
	for _, p := range []string{"", "a/", "a/c/", "bb/", "z/"} {
		got, gotP, err := listKeys(ctx, b, bucket.ListOptions{Prefix: p, Delimiter: "/"})
		if err != nil {
			return err
		}
		want, wantP := fold(listKeysFixture, p, "/", "")
		if err := wantList(fmt.Sprintf("objects under %q", p), got, want); err != nil {
			return err
		}
		if err := wantList(fmt.Sprintf("prefixes under %q", p), gotP, wantP); err != nil {
			return err
		}
	}
	return nil
}

func checkListStartAfter(ctx context.Context, b bucket.Bucket) error {
	if err := putKeys(ctx, b, listKeysFixture); err != nil {
		return err
	}
	for _, after := range []string{"a", "a/c", "a0", "bb/", "é", "zzz"} {
		got, _, err := listKeys(ctx, b, bucket.ListOptions{StartAfter: after})
		if err != nil {
			return err
		}
		want := filterKeys(listKeysFixture, func(k string) bool { return k > after })
		if err := wantList(fmt.Sprintf("start after %q", after), got, want); err != nil {
			return err
		}
	}
	got, gotP, err := listKeys(ctx, b, bucket.ListOptions{Prefix: "a/", Delimiter: "/", StartAfter: "a/b"})
	if err != nil {
		return err
	}
	want, wantP := fold(listKeysFixture, "a/", "/", "a/b")
	if err := wantList("objects under a/ after a/b", got, want); err != nil {
		return err
	}
	return wantList("prefixes under a/ after a/b", gotP, wantP)
}

func checkListPaging(ctx context.Context, b bucket.Bucket) error {
	var keys []string
	for i := range 23 {
		keys = append(keys, fmt.Sprintf("p/%02d", i))
		if i%4 == 0 {
			keys = append(keys, fmt.Sprintf("p/%02d-dir/child", i))
		}
	}
	if err := putKeys(ctx, b, keys); err != nil {
		return err
	}
	for _, delim := range []string{"", "/"} {
		opts := bucket.ListOptions{Prefix: "p/", Delimiter: delim, PageSize: 4}
		var got, gotP []string
		pages := 0
		for {
			page, err := b.List(ctx, opts)
			if err != nil {
				return fmt.Errorf("list page %d: %w", pages, err)
			}
			pages++
			if n := len(page.Objects) + len(page.Prefixes); n > 4 {
				return fmt.Errorf("page of %d entries, want at most 4", n)
			}
			for _, o := range page.Objects {
				got = append(got, o.Key)
			}
			gotP = append(gotP, page.Prefixes...)
			if page.NextPageToken == "" {
				break
			}
			if pages > 100 {
				return errors.New("listing does not end")
			}
			opts.PageToken = page.NextPageToken
		}
		want, wantP := keys, []string(nil)
		if delim != "" {
			want, wantP = fold(keys, "p/", delim, "")
		} else {
			want = sortedCopy(keys)
		}
		if pages < 2 {
			return fmt.Errorf("%d entries in %d page(s) of at most 4", len(got)+len(gotP), pages)
		}
		if err := wantList(fmt.Sprintf("paged objects (delimiter %q)", delim), got, want); err != nil {
			return err
		}
		if err := wantList(fmt.Sprintf("paged prefixes (delimiter %q)", delim), gotP, wantP); err != nil {
			return err
		}
	}
	return nil
}

func checkReadAfterWrite(ctx context.Context, b bucket.Bucket) error {
	for i := range 10 {
		body := fmt.Sprintf("generation %d", i)
		if _, err := put(ctx, b, "raw", body); err != nil {
			return err
		}
		if _, err := wantBody(ctx, b, "raw", body); err != nil {
			return err
		}
	}
	if err := b.Delete(ctx, "raw", bucket.Unconditional); err != nil {
		return err
	}
	if _, _, err := b.Get(ctx, "raw"); !errors.Is(err, bucket.ErrNotExist) {
		return fmt.Errorf("get after delete: %v, want ErrNotExist", err)
	}
	return nil
}

func checkListAfterWrite(ctx context.Context, b bucket.Bucket) error {
	var want []string
	for i := range 10 {
		k := fmt.Sprintf("law/%d", i)
		if _, err := put(ctx, b, k, "x"); err != nil {
			return err
		}
		want = append(want, k)
		got, _, err := listKeys(ctx, b, bucket.ListOptions{Prefix: "law/"})
		if err != nil {
			return err
		}
		if err := wantList("list after write", got, want); err != nil {
			return err
		}
	}
	if err := b.Delete(ctx, "law/3", bucket.Unconditional); err != nil {
		return err
	}
	got, _, err := listKeys(ctx, b, bucket.ListOptions{Prefix: "law/"})
	if err != nil {
		return err
	}
	return wantList("list after delete", got, slices.Delete(want, 3, 4))
}

const racers = 20

// race runs n writers released together and returns each one's error and
// the attributes of its write.
func race(n int, write func(i int) (bucket.Attrs, error)) ([]bucket.Attrs, []error) {
	attrs := make([]bucket.Attrs, n)
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			attrs[i], errs[i] = write(i)
		}()
	}
	start.Done()
	done.Wait()
	return attrs, errs
}

// oneWinner checks that exactly one writer won, every other failed with
// ErrPrecondition, and the stored object is the winner's.
func oneWinner(ctx context.Context, b bucket.Bucket, key string, attrs []bucket.Attrs, errs []error, body func(i int) string) error {
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			return fmt.Errorf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, bucket.ErrPrecondition):
			return fmt.Errorf("writer %d lost with %v, want ErrPrecondition", i, err)
		}
	}
	if winner < 0 {
		return errors.New("no writer won")
	}
	g, err := wantBody(ctx, b, key, body(winner))
	if err != nil {
		return fmt.Errorf("stored object is not the winner's: %w", err)
	}
	if g.Version != attrs[winner].Version {
		return fmt.Errorf("stored version %q, winner wrote %q", g.Version, attrs[winner].Version)
	}
	return nil
}

func checkConcurrentCreate(ctx context.Context, b bucket.Bucket) error {
	for round := range 3 {
		key := fmt.Sprintf("race/create/%d", round)
		body := func(i int) string { return fmt.Sprintf("writer %d round %d", i, round) }
		attrs, errs := race(racers, func(i int) (bucket.Attrs, error) {
			return b.Put(ctx, key, []byte(body(i)), bucket.IfAbsent())
		})
		if err := oneWinner(ctx, b, key, attrs, errs, body); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	return nil
}

func checkConcurrentReplace(ctx context.Context, b bucket.Bucket) error {
	key := "race/replace"
	for round := range 3 {
		base, err := put(ctx, b, key, fmt.Sprintf("base %d", round))
		if err != nil {
			return err
		}
		body := func(i int) string { return fmt.Sprintf("writer %d round %d", i, round) }
		attrs, errs := race(racers, func(i int) (bucket.Attrs, error) {
			return b.Put(ctx, key, []byte(body(i)), bucket.IfVersion(base.Version))
		})
		if err := oneWinner(ctx, b, key, attrs, errs, body); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	return nil
}

func checkInvalidKeys(ctx context.Context, b bucket.Bucket) error {
	bad := []string{"", strings.Repeat("k", bucket.MaxKeyLen+1), "bad\xffutf8", "line\nfeed", "carriage\rreturn", ".", ".."}
	for _, k := range bad {
		if _, _, err := b.Get(ctx, k); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("get %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("stat %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
		if _, err := b.Put(ctx, k, []byte("x"), bucket.Unconditional); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("put %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
		if err := b.Delete(ctx, k, bucket.Unconditional); !errors.Is(err, bucket.ErrInvalidKey) {
			return fmt.Errorf("delete %q: %v, want ErrInvalidKey", trunc([]byte(k)), err)
		}
	}
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
	if err != nil {
		return err
	}
	if len(objs) != 0 {
		return fmt.Errorf("invalid keys left %d objects behind", len(objs))
	}
	return nil
}

// checkLongKey writes a key of 900 bytes in nine 99-byte segments and a
// tail: long, but within MaxKeyLen with room for an adapter's prefix.
func checkLongKey(ctx context.Context, b bucket.Bucket) error {
	var segs []string
	for i := range 9 {
		segs = append(segs, strings.Repeat(string(rune('a'+i)), 98))
	}
	key := strings.Join(segs, "/") + "/"
	key += strings.Repeat("z", 900-len(key))
	if _, err := put(ctx, b, key, "long"); err != nil {
		return err
	}
	if _, err := wantBody(ctx, b, key, "long"); err != nil {
		return err
	}
	got, _, err := listKeys(ctx, b, bucket.ListOptions{})
	if err != nil {
		return err
	}
	return wantList("list", got, []string{key})
}

func checkCancelledContext(ctx context.Context, b bucket.Bucket) error {
	if _, err := put(ctx, b, "kept", "x"); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Put(cctx, "cancelled", []byte("x"), bucket.Unconditional); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("put with cancelled context: %v, want context.Canceled", err)
	}
	if _, err := b.Put(cctx, "kept", []byte("y"), bucket.IfAbsent()); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("conditional put with cancelled context: %v, want context.Canceled", err)
	}
	if _, _, err := b.Get(cctx, "kept"); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("get with cancelled context: %v, want context.Canceled", err)
	}
	if err := b.Delete(cctx, "kept", bucket.Unconditional); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("delete with cancelled context: %v, want context.Canceled", err)
	}
	if _, err := b.List(cctx, bucket.ListOptions{}); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("list with cancelled context: %v, want context.Canceled", err)
	}
	if err := wantMissing(ctx, b, "cancelled"); err != nil {
		return err
	}
	_, err := wantBody(ctx, b, "kept", "x")
	return err
}

func checkBigObject(ctx context.Context, b bucket.Bucket) error {
	body := make([]byte, 8<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(body); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			body[i+j] = byte(v >> (8 * j))
		}
	}
	a, err := b.Put(ctx, "big", body, bucket.IfAbsent())
	if err != nil {
		return fmt.Errorf("put 8 MiB: %w", err)
	}
	if a.Size != int64(len(body)) {
		return fmt.Errorf("size %d, want %d", a.Size, len(body))
	}
	got, g, err := b.Get(ctx, "big")
	if err != nil {
		return fmt.Errorf("get 8 MiB: %w", err)
	}
	if !bytes.Equal(got, body) || g.Size != a.Size || g.Version != a.Version {
		return fmt.Errorf("8 MiB object did not round-trip (got %d bytes, attrs %+v)", len(got), g)
	}
	return nil
}

func checkZeroValues(ctx context.Context, b bucket.Bucket) error {
	zero := bucket.Attrs{}
	body, a, err := b.Get(ctx, "missing")
	if err == nil || body != nil || a != zero {
		return fmt.Errorf("failed get returned %q, %+v, %v", body, a, err)
	}
	if a, err := b.Stat(ctx, "missing"); err == nil || a != zero {
		return fmt.Errorf("failed stat returned %+v, %v", a, err)
	}
	if _, err := put(ctx, b, "present", "x"); err != nil {
		return err
	}
	if a, err := b.Put(ctx, "present", []byte("y"), bucket.IfAbsent()); err == nil || a != zero {
		return fmt.Errorf("failed put returned %+v, %v", a, err)
	}
	if a, err := b.Put(ctx, "", []byte("y"), bucket.Unconditional); err == nil || a != zero {
		return fmt.Errorf("put of an invalid key returned %+v, %v", a, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if p, err := b.List(cctx, bucket.ListOptions{}); err == nil || p.Objects != nil || p.Prefixes != nil || p.NextPageToken != "" {
		return fmt.Errorf("failed list returned %+v, %v", p, err)
	}
	return nil
}
