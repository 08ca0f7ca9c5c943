package conformance

// Bucket checks of listing: order, prefixes, delimiters, start-after,
// paging, and listings that see the latest write.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/cairnstore/cairn/bucket"
)

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
