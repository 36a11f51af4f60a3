package settings

import (
	"strings"
	"testing"
)

func TestStorageSettingsValidate(t *testing.T) {
	tests := []struct {
		key, value string
		refusal    string // "" when valid
	}{
		{PayloadStorage, "local", ""},
		{PayloadStorage, "s3", ""},
		{PayloadStorage, "S3", "one of local, s3"},
		{S3Bucket, "", ""},
		{S3Bucket, "wharf-payloads.eu", ""},
		{S3Bucket, "Wharf", "bucket name"},
		{S3Bucket, "ab", "bucket name"},
		{S3Bucket, "a..b", "bucket name"},
		{S3Region, "eu-central-1", ""},
		{S3Region, "eu central", "region"},
		{S3Endpoint, "", ""},
		{S3Endpoint, "http://127.0.0.1:9000", ""},
		{S3Endpoint, "https://s3.example.com/", ""},
		{S3Endpoint, "ftp://s3.example.com", "http:// or https://"},
		{S3Endpoint, "https://key:secret@s3.example.com", "credentials"},
		{S3Endpoint, "https://s3.example.com/bucket", "without a path"},
		{S3Endpoint, "https://", "host"},
		{S3PathStyle, "true", ""},
		{S3PathStyle, "yes", "one of true, false"},
		{S3Prefix, "", ""},
		{S3Prefix, "wharf/", ""},
		{S3Prefix, "a/b-c_d.e", ""},
		{S3Prefix, "/wharf", "leading slash"},
		{S3Prefix, "a//b", "empty segments"},
		{S3Prefix, "../x", "empty segments"},
		{S3Prefix, "a b", "letters, digits"},
	}
	for _, tc := range tests {
		err := Validate(tc.key, tc.value)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s=%q refused: %v", tc.key, tc.value, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s=%q: %v, want a refusal saying %q", tc.key, tc.value, err, tc.refusal)
		}
	}
}

func TestStorageSettingsParse(t *testing.T) {
	v, err := Parse(map[string]string{PayloadStorage: "s3", S3Bucket: "bucket-1", S3Region: "eu-west-1",
		S3Endpoint: "http://127.0.0.1:9000", S3PathStyle: "true", S3Prefix: "p/"})
	if err != nil {
		t.Fatal(err)
	}
	want := Storage{Kind: "s3", Bucket: "bucket-1", Region: "eu-west-1", Endpoint: "http://127.0.0.1:9000", PathStyle: true, Prefix: "p/"}
	if v.Storage != want {
		t.Fatalf("parsed %+v, want %+v", v.Storage, want)
	}
	if err := CheckTogether(map[string]string{PayloadStorage: "s3"}); err == nil || !strings.Contains(err.Error(), S3Bucket) {
		t.Fatalf("S3 without a bucket: %v", err)
	}
	if err := CheckTogether(Defaults()); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
