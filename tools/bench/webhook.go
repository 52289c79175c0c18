package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"
)

// webhookTarget is createPet while one webhook endpoint, a receiver in this
// process on loopback, subscribes to pet.created: each create writes an
// outbox row in its transaction, and the server's deliverer signs and
// POSTs it. createPet runs without an endpoint. The servers run with
// --webhooks-allow-private so that the receiver may be on loopback.
const webhookTarget = "createHook"

// webhookDrain is how long, at most, the deliveries after a createHook run
// are waited for (and profiled, with -profile createHook).
const webhookDrain = 10 * time.Second

// measureWebhook runs t (createPet's request) with the endpoint subscribed
// for the run, and returns what removes it (with its history: not a
// create's cost, so not measured). It fails unless the receiver gets
// deliveries; the deliverer sends one endpoint's events one at a time, so
// a burst of creates is delivered after the run, and only what arrived
// within a while of its end is waited for.
func measureWebhook(dir, baseURL, token string, t target, conns, threads int, d time.Duration) (result, func(), error) {
	var delivered atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	id, err := staffCall(baseURL, token, http.MethodPost, "/api/petstore/webhooks",
		map[string]any{"url": rcv.URL, "events": []string{"pet.created"}}, http.StatusCreated)
	if err != nil {
		rcv.Close()
		return result{}, func() {}, err
	}
	remove := func() {
		_, _ = staffCall(baseURL, token, http.MethodDelete, "/api/petstore/webhooks/"+id, nil, http.StatusNoContent)
		rcv.Close()
	}
	r, err := runWrk(dir, baseURL, t, conns, threads, d)
	if err != nil {
		return r, remove, err
	}
	for deadline := time.Now().Add(webhookDrain); delivered.Load() < r.Requests && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if delivered.Load() == 0 {
		return r, remove, fmt.Errorf("the webhook receiver got none of %d creates", r.Requests)
	}
	fmt.Printf("%s: %d of %d creates delivered within %v of the run's end\n", webhookTarget, delivered.Load(), r.Requests, webhookDrain)
	return r, remove, nil
}

// staffCall sends a staff API request and returns the answer's id.
func staffCall(baseURL, token, method, path string, body any, want int) (string, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return "", err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, baseURL+path, rd)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return "", fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	var answer struct{ ID string }
	_ = json.Unmarshal(data, &answer)
	return answer.ID, nil
}
