package settings

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"wharf/internal/persistence"
)

// Storage is where payload blobs are kept (docs/storage.md). Credentials are never a
// setting: the S3 store takes them from the AWS credential chain.
type Storage struct {
	// Kind is "local" or "s3".
	Kind      string
	Bucket    string
	Region    string
	Endpoint  string
	PathStyle bool
	Prefix    string
}

// storageCatalogue holds the payload storage settings.
var storageCatalogue = []Setting{
	{
		Key: PayloadStorage, Label: "Where payloads are stored", Default: "local",
		Description: "Where new payloads are stored: local (the data directory) or s3 (the S3 settings below). Applies at the next start; payloads stored before stay readable where they are.",
		check:       oneOf("local", "s3"),
	},
	{
		Key: S3Bucket, Label: "S3 bucket", Default: "", Optional: true,
		Description: "S3 bucket for payloads, required when payload_storage is s3. Credentials come from the AWS credential chain, never from Wharf.",
		check:       bucketName,
	},
	{
		Key: S3Region, Label: "S3 region", Default: "", Optional: true,
		Description: "AWS region of the bucket, such as eu-central-1; empty takes the region of the AWS configuration.",
		check:       region,
	},
	{
		Key: S3Endpoint, Label: "S3 endpoint (for a server other than AWS)", Default: "", Optional: true,
		Description: "Base URL of an S3-compatible server, such as https://minio.example.com:9000; empty for AWS.",
		check:       endpoint,
	},
	{
		Key: S3PathStyle, Label: "S3 path-style addresses", Default: "false",
		Description: "true addresses the bucket in the URL path (most S3-compatible servers), false in the host name (AWS).",
		check:       oneOf("true", "false"),
	},
	{
		Key: S3Prefix, Label: "S3 key prefix", Default: "", Optional: true,
		Description: "Prefix of every object key, such as wharf/ (letters, digits and - _ . /); empty for none.",
		check:       prefix,
	},
}

func parseStorage(get func(string) string) Storage {
	return Storage{Kind: get(PayloadStorage), Bucket: get(S3Bucket), Region: get(S3Region),
		Endpoint: get(S3Endpoint), PathStyle: get(S3PathStyle) == "true", Prefix: get(S3Prefix)}
}

// CheckTogether checks what single values cannot show: S3 chosen without a bucket. values
// holds every setting (stored or default); the error is a *persistence.FieldError.
func CheckTogether(values map[string]string) error {
	if values[PayloadStorage] == "s3" && values[S3Bucket] == "" {
		return &persistence.FieldError{Field: S3Bucket, Message: "is required when payload_storage is s3"}
	}
	return nil
}

func oneOf(choices ...string) func(string) error {
	return func(s string) error {
		for _, c := range choices {
			if s == c {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(choices, ", "))
	}
}

var (
	bucketRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	regionRe = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	prefixRe = regexp.MustCompile(`^[A-Za-z0-9._/-]*$`)
)

func bucketName(s string) error {
	if s != "" && (!bucketRe.MatchString(s) || strings.Contains(s, "..")) {
		return errors.New("must be an S3 bucket name: 3 to 63 lowercase letters, digits, dots and hyphens")
	}
	return nil
}

func region(s string) error {
	if s != "" && !regionRe.MatchString(s) {
		return errors.New("must be a region name such as eu-central-1")
	}
	return nil
}

// endpoint refuses anything but an http(s) URL of a host, and credentials in it: they
// belong in the AWS credential chain.
func endpoint(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("must be a URL such as https://s3.example.com")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must start with http:// or https://")
	case u.Host == "":
		return errors.New("must name a host")
	case u.User != nil:
		return errors.New("must not carry credentials; they come from the AWS credential chain")
	case u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return errors.New("must be a base URL without a path, query or fragment")
	}
	return nil
}

func prefix(s string) error {
	if s == "" {
		return nil
	}
	if len(s) > 200 || !prefixRe.MatchString(s) || strings.HasPrefix(s, "/") ||
		path.Clean("/"+s) != "/"+strings.TrimSuffix(s, "/") {
		return errors.New("must be letters, digits and - _ . / without a leading slash or empty segments, such as wharf/")
	}
	return nil
}
