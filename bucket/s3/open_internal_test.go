package s3

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		url  string
		want urlConfig
	}{
		{"s3://bkt", urlConfig{bucket: "bkt"}},
		{"s3://bkt/", urlConfig{bucket: "bkt"}},
		{"s3://bkt/a/b", urlConfig{bucket: "bkt", prefix: "a/b/"}},
		{"s3://bkt/a/b/?region=eu-west-1", urlConfig{bucket: "bkt", prefix: "a/b/", region: "eu-west-1"}},
		{"s3://bkt?endpoint=http://127.0.0.1:9000&path_style=true",
			urlConfig{bucket: "bkt", endpoint: "http://127.0.0.1:9000", pathStyle: true}},
		{"s3://bkt?path_style=1", urlConfig{bucket: "bkt", pathStyle: true}},
		{"s3://bkt?path_style=false", urlConfig{bucket: "bkt"}},
		{"s3://bkt?conditional_delete=false", urlConfig{bucket: "bkt", noCondDelete: true}},
		{"s3://bkt?conditional_delete=true", urlConfig{bucket: "bkt"}},
		{"s3://bkt?endpoint=https%3A%2F%2Fs3.example.com%3A8443&region=r1&path_style=TRUE",
			urlConfig{bucket: "bkt", endpoint: "https://s3.example.com:8443", region: "r1", pathStyle: true}},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseURL(u)
		if err != nil {
			t.Fatalf("parse %s: %v", c.url, err)
		}
		if got != c.want {
			t.Fatalf("parse %s = %+v, want %+v", c.url, got, c.want)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	cases := []struct{ url, want string }{
		{"s3://bkt?bogus=1", `unknown query parameter "bogus"`},
		{"s3://bkt?endpoint=http://x&Region=r", `unknown query parameter "Region"`},
		{"s3://bkt?path_style=maybe", `path_style="maybe"`},
		{"s3://bkt?conditional_delete=no-thanks", `conditional_delete="no-thanks"`},
		{"s3://bkt?path_style=", `path_style=""`},
		{"s3://bkt?path_style=true&path_style=false", `given 2 times`},
		{"s3://bkt?endpoint=ftp://host", `want an http or https URL`},
		{"s3://bkt?endpoint=127.0.0.1:9000", `want an http or https URL`},
		{"s3:///prefix", `want s3://BUCKET`},
		{"s3://bkt/a/%0A/b", `prefix`},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseURL(u)
		if err == nil {
			t.Fatalf("parse %s = %+v, want an error", c.url, got)
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "s3: ") {
			t.Fatalf("parse %s: error %q, want it to start with \"s3: \" and mention %q", c.url, err, c.want)
		}
	}
}

func TestChecksumFromETag(t *testing.T) {
	cases := map[string]string{
		`"9a0364b9e99bb480dd25e1f0284c8555"`:   "md5:9a0364b9e99bb480dd25e1f0284c8555",
		`"9A0364B9E99BB480DD25E1F0284C8555"`:   "md5:9a0364b9e99bb480dd25e1f0284c8555",
		`"9a0364b9e99bb480dd25e1f0284c8555-2"`: "", // multipart
		`"9a0364b9e99bb480dd25e1f0284c855z"`:   "",
		`W/"9a0364b9e99bb480dd25e1f0284c8555"`: "",
		`""`:                                   "",
	}
	for etag, want := range cases {
		if got := checksum(version(&etag)); got != want {
			t.Errorf("checksum(%s) = %q, want %q", etag, got, want)
		}
	}
	bare := "9a0364b9e99bb480dd25e1f0284c8555"
	if got, want := version(&bare), `"9a0364b9e99bb480dd25e1f0284c8555"`; string(got) != want {
		t.Errorf("version(%s) = %s, want %s", bare, got, want)
	}
	if got := version(nil); got != "" {
		t.Errorf("version(nil) = %q, want \"\"", got)
	}
}
