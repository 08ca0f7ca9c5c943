package s3

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnstore/cairn/bucket"
)

func init() {
	bucket.Register("s3", open)
}

// defaultEndpointRegion is the region used with an explicit endpoint when
// nothing names one: S3-compatible stores mostly ignore it, but SigV4
// needs some region to sign with.
const defaultEndpointRegion = "us-east-1"

// urlConfig is what an s3:// URL says.
type urlConfig struct {
	bucket    string
	prefix    string
	endpoint  string
	region    string
	pathStyle bool
	// noCondDelete: conditional_delete=false declares a store that does
	// not honour If-Match on DeleteObject (Options.NoConditionalDelete).
	noCondDelete bool
}

func parseURL(u *url.URL) (urlConfig, error) {
	q, err := bucket.Query(u, "endpoint", "region", "path_style", "conditional_delete")
	if err != nil {
		return urlConfig{}, fmt.Errorf("s3: %w", err)
	}
	if u.Host == "" {
		return urlConfig{}, fmt.Errorf("s3: want s3://BUCKET[/PREFIX]")
	}
	prefix, err := bucket.NormalizePrefix(u.Path)
	if err != nil {
		return urlConfig{}, fmt.Errorf("s3: prefix: %w", err)
	}
	c := urlConfig{bucket: u.Host, prefix: prefix, endpoint: q["endpoint"], region: q["region"]}
	if v, ok := q["path_style"]; ok {
		if c.pathStyle, err = strconv.ParseBool(v); err != nil {
			return urlConfig{}, fmt.Errorf("s3: path_style=%q: want a boolean", v)
		}
	}
	if v, ok := q["conditional_delete"]; ok {
		cd, err := strconv.ParseBool(v)
		if err != nil {
			return urlConfig{}, fmt.Errorf("s3: conditional_delete=%q: want a boolean", v)
		}
		c.noCondDelete = !cd
	}
	if c.endpoint != "" {
		e, err := url.Parse(c.endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return urlConfig{}, fmt.Errorf("s3: endpoint=%q: want an http or https URL", c.endpoint)
		}
	}
	return c, nil
}

func open(ctx context.Context, u *url.URL) (bucket.Bucket, error) {
	c, err := parseURL(u)
	if err != nil {
		return nil, err
	}
	var loadOpts []func(*config.LoadOptions) error
	if c.region != "" {
		loadOpts = append(loadOpts, config.WithRegion(c.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS config: %w", err)
	}
	if cfg.Region == "" {
		if c.endpoint == "" {
			return nil, fmt.Errorf("s3: no region: set AWS_REGION or add ?region= to the URL")
		}
		cfg.Region = defaultEndpointRegion
	}
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		if c.endpoint != "" {
			o.BaseEndpoint = aws.String(c.endpoint)
		}
		o.UsePathStyle = c.pathStyle
	})
	return New(client, c.bucket, c.prefix, Options{NoConditionalDelete: c.noCondDelete})
}
