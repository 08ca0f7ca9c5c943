package s3_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/s3"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
)

const (
	testAccessKey = "cairntestkey"
	testSecretKey = "cairntestsecret"
	testRegion    = "us-east-1"
)

// newClient returns an SDK client for a store at endpoint. A nil hc means
// the SDK's default HTTP client. attempts of 0 keeps the SDK's default.
func newClient(endpoint string, hc awss3.HTTPClient, attempts int) *awss3.Client {
	o := awss3.Options{
		Region:           testRegion,
		BaseEndpoint:     aws.String(endpoint),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
		RetryMaxAttempts: attempts,
	}
	if hc != nil {
		o.HTTPClient = hc
	}
	return awss3.New(o)
}

var bucketSeq atomic.Int64

// createBucket makes a new, empty S3 bucket with a unique name.
func createBucket(ctx context.Context, client *awss3.Client) (string, error) {
	name := fmt.Sprintf("cairn-test-%d", bucketSeq.Add(1))
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &name}); err != nil {
		return "", fmt.Errorf("create bucket %s: %w", name, err)
	}
	return name, nil
}

// newBucketFunc gives the conformance suite a fresh S3 bucket per check,
// with the adapter keeping its keys under prefix.
func newBucketFunc(client *awss3.Client, prefix string, opts s3.Options) conformance.NewBucketFunc {
	return func(ctx context.Context) (bucket.Bucket, error) {
		name, err := createBucket(ctx, client)
		if err != nil {
			return nil, err
		}
		return s3.New(client, name, prefix, opts)
	}
}

// runConformance runs the bucket suite at the bucket root and under a
// prefix.
func runConformance(t *testing.T, client *awss3.Client, gaps map[string]string, opts s3.Options) {
	for _, prefix := range []string{"", "some/prefix/"} {
		name := "root"
		if prefix != "" {
			name = "prefix"
		}
		t.Run(name, func(t *testing.T) {
			conformancetest.RunBucketSuite(t, newBucketFunc(client, prefix, opts), conformance.BucketOptions{KnownGaps: gaps})
		})
	}
}
