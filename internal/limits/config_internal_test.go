package limits

import (
	"net/url"
	"strings"
	"testing"
)

// The start event names the Redis it counts in, never a password in it.
func TestRateLimitStoreHidesPasswords(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "memory",
		"redis://127.0.0.1:6379/0":             "redis://127.0.0.1:6379/0",
		"redis://:secret1@127.0.0.1:6379/0":    "redis://:xxxxx@127.0.0.1:6379/0",
		"redis://user:secret1@10.0.0.1:6379/0": "redis://user:xxxxx@10.0.0.1:6379/0",
		"redis://s1:26379/0?master_name=m&password=secret1&sentinel_password=secret2&addr=s2:26379": "redis://s1:26379/0?addr=s2%3A26379&master_name=m&password=xxxxx&sentinel_password=xxxxx",
	} {
		got := Config{}.Store()
		if in != "" {
			u, err := url.Parse(in)
			if err != nil {
				t.Fatal(err)
			}
			got = redacted(u)
		}
		if got != want || strings.Contains(got, "secret") {
			t.Errorf("the Store() of %q = %q, want %q", in, got, want)
		}
	}
}

// redisOf is rawURL parsed; nil when empty.
func redisOf(t testing.TB, rawURL string) *Redis {
	t.Helper()
	if rawURL == "" {
		return nil
	}
	r, err := ParseRedis(rawURL)
	if err != nil {
		t.Fatalf("ParseRedis(%q): %v", rawURL, err)
	}
	return r
}
