package client

import (
	"net/http"
	"net/url"
	"testing"
)

func TestNextLink(t *testing.T) {
	for header, want := range map[string]string{
		`</v1/pets?cursor=MTo0&limit=20>; rel="next"`:    "/v1/pets?cursor=MTo0&limit=20",
		`</a>; rel="prev", </b>; rel="next"`:             "/b",
		`</a>; rel="prev next"`:                          "/a",
		`</v1/pets>; rel="successor-version"`:            "",
		`<https://x.example/p?a=1>; title="x"; REL=next`: "https://x.example/p?a=1",
		``:        "",
		`garbage`: "",
	} {
		if got := nextLink([]string{header}); got != want {
			t.Errorf("Link %q: next %q, want %q", header, got, want)
		}
	}
}

// The cursor comes from the Link target, absolute or relative; a Link
// without one is an error, not the end of the listing.
func TestNextCursor(t *testing.T) {
	page, _ := url.Parse("https://shop.example.org/api/v1/pets?limit=2")
	for link, want := range map[string]string{
		`</v1/pets?cursor=MTo0&limit=2>; rel="next"`:                              "MTo0",
		`<https://shop.example.org/api/v1/pets?limit=2&cursor=MTo1>; rel="next"`:  "MTo1",
		`<pets?cursor=MTo2>; rel="next"`:                                          "MTo2",
		`<https://elsewhere.example/v1/pets?cursor=MTo3&status=sold>; rel="next"`: "MTo3",
		`</v1/pets>; rel="successor-version"`:                                     "",
		`</v1/pets?cursor=>; rel="next"`:                                          "error",
		`</v1/pets?limit=2>; rel="next"`:                                          "error",
		`</v1/pets?cursor=a&cursor=b>; rel="next"`:                                "error",
		`<%zz?cursor=a>; rel="next"`:                                              "error",
	} {
		resp := &response{header: http.Header{"Link": {link}}, method: http.MethodGet, url: page}
		got, err := nextCursor(resp)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("Link %s: cursor %q (%v), want %q", link, got, err, want)
		}
	}
}
