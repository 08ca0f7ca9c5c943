package bucket

import (
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
)

// ListSorted computes one page of a listing from every object an adapter
// holds under opts.Prefix, sorted by key. Adapters that keep their own
// index (mem, file) share it so that prefix, delimiter, start-after and
// paging mean the same everywhere.
//
// Its page tokens are the last entry of the page, tagged "k" for a key and
// "p" for a folded prefix (which covers every key under it).
func ListSorted(sorted []Attrs, opts ListOptions) (ListPage, error) {
	after, err := ListAfter(opts)
	if err != nil {
		return ListPage{}, err
	}
	i := max(sort.Search(len(sorted), func(i int) bool { return sorted[i].Key > after }),
		sort.Search(len(sorted), func(i int) bool { return sorted[i].Key >= opts.Prefix }))
	return ListSeq(slices.Values(sorted[i:]), opts)
}

// ListAfter returns the greatest key a listing with opts has already
// passed (its StartAfter, or its page token's entry): an adapter that
// walks its keys in order may skip every key up to it.
func ListAfter(opts ListOptions) (string, error) {
	after, _, err := listStart(opts)
	return after, err
}

// listStart returns where a listing resumes: after this key, and past
// every key under skipPrefix (a folded prefix its last page ended with).
func listStart(opts ListOptions) (after, skipPrefix string, err error) {
	after = opts.StartAfter
	if tok := opts.PageToken; tok != "" {
		switch tok[0] {
		case 'k':
			after = max(after, tok[1:])
		case 'p':
			after, skipPrefix = max(after, tok[1:]), tok[1:]
		default:
			return "", "", fmt.Errorf("%w: bad page token", ErrInvalidKey)
		}
	}
	return after, skipPrefix, nil
}

// ListSeq is ListSorted over keys given in ascending order, which may
// begin anywhere at or before the listing's start: it takes keys until
// the page is full and one more entry shows that another page follows,
// so an adapter that yields its keys in order as it walks them stops
// walking there.
func ListSeq(keys iter.Seq[Attrs], opts ListOptions) (ListPage, error) {
	after, skipPrefix, err := listStart(opts)
	if err != nil {
		return ListPage{}, err
	}
	n := PageSize(opts.PageSize)
	var page ListPage
	last, lastIsPrefix := "", false
	for a := range keys {
		if a.Key <= after || a.Key < opts.Prefix {
			continue
		}
		if !strings.HasPrefix(a.Key, opts.Prefix) {
			break
		}
		if skipPrefix != "" && strings.HasPrefix(a.Key, skipPrefix) {
			continue
		}
		if opts.Delimiter != "" {
			rest := a.Key[len(opts.Prefix):]
			if j := strings.Index(rest, opts.Delimiter); j >= 0 {
				p := opts.Prefix + rest[:j+len(opts.Delimiter)]
				if lastIsPrefix && p == last {
					continue
				}
				if len(page.Objects)+len(page.Prefixes) == n {
					page.NextPageToken = token(last, lastIsPrefix)
					return page, nil
				}
				page.Prefixes = append(page.Prefixes, p)
				last, lastIsPrefix = p, true
				skipPrefix = p
				continue
			}
		}
		if len(page.Objects)+len(page.Prefixes) == n {
			page.NextPageToken = token(last, lastIsPrefix)
			return page, nil
		}
		page.Objects = append(page.Objects, a)
		last, lastIsPrefix = a.Key, false
	}
	return page, nil
}

func token(last string, isPrefix bool) string {
	if isPrefix {
		return "p" + last
	}
	return "k" + last
}
