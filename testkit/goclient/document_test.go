package goclient_test

import (
	"encoding/json"
	"petstore/client"
	"slices"
	"testing"

	"petstore/openapi"
)

// The client's codes and statuses are the document's: a code added to the
// catalogue needs its constant here.
func TestCodesAndStatusesAreTheDocuments(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Error"`
				PetStatus struct {
					Enum []string `json:"enum"`
				} `json:"PetStatus"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	codes := []client.ErrorCode{client.CodeInvalidRequest, client.CodeUnauthorized, client.CodeInsufficientScope, client.CodeNotFound, client.CodeMethodNotAllowed, client.CodeGone,
		client.CodePayloadTooLarge, client.CodeUnsupportedMediaType, client.CodeIdempotencyKeyReused, client.CodeRateLimitExceeded,
		client.CodeAPIKeyBanned, client.CodeInternalError, client.CodeNotLeader, client.CodeNotShipped}
	if want := doc.Components.Schemas.Error.Properties.Code.Enum; !sameSet(codes, want) {
		t.Errorf("codes %v, the document's %v", codes, want)
	}
	if want := doc.Components.Schemas.PetStatus.Enum; !sameSet([]client.Status{client.Available, client.Pending, client.Sold}, want) {
		t.Errorf("statuses, the document's %v", want)
	}
}

func sameSet[T ~string](got []T, want []string) bool {
	g := make([]string, len(got))
	for i, v := range got {
		g[i] = string(v)
	}
	slices.Sort(g)
	w := slices.Sorted(slices.Values(want))
	return len(w) > 0 && slices.Equal(g, w)
}
