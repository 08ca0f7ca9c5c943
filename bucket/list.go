package bucket

import "context"

// ListAll follows a listing page by page and returns every object and
// folded prefix under opts. It is meant for bounded listings (tests,
// tools); the engine pages itself.
func ListAll(ctx context.Context, b Bucket, opts ListOptions) ([]Attrs, []string, error) {
	var objs []Attrs
	var prefixes []string
	opts.PageToken = ""
	for {
		page, err := b.List(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, page.Objects...)
		prefixes = append(prefixes, page.Prefixes...)
		if page.NextPageToken == "" {
			return objs, prefixes, nil
		}
		opts.PageToken = page.NextPageToken
	}
}

// DeleteAll deletes every object under prefix, unconditionally.
func DeleteAll(ctx context.Context, b Bucket, prefix string) error {
	objs, _, err := ListAll(ctx, b, ListOptions{Prefix: prefix})
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := b.Delete(ctx, o.Key, Unconditional); err != nil {
			return err
		}
	}
	return nil
}
