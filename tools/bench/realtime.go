package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// realtimeTarget is createPet while a superuser subscribes to pets over
// PocketBase's realtime API, as a front end that shows new animals live
// does: each create is built into a record and broadcast. createPet runs
// without a subscriber.
const realtimeTarget = "createSub"

// measureRealtime runs t (createPet's request) with one realtime client
// subscribed to pets for the whole run, and fails unless the client hears a
// create message for every create wrk counted.
func measureRealtime(dir, baseURL, token string, t target, conns, threads int, d time.Duration) (result, error) {
	sub, err := subscribePets(baseURL, token)
	if err != nil {
		return result{}, err
	}
	defer sub.close()
	r, err := runWrk(dir, baseURL, t, conns, threads, d)
	if err != nil {
		return r, err
	}
	// Each message is sent before its 201; the stream may still carry some.
	for deadline := time.Now().Add(10 * time.Second); sub.creates.Load() < r.Requests; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("the realtime subscriber heard %d creates of %d", sub.creates.Load(), r.Requests)
		}
	}
	return r, nil
}

// petsSubscriber is a realtime client subscribed to pets/*, counting the
// create messages it reads.
type petsSubscriber struct {
	creates atomic.Int64
	close   func()
}

// subscribePets connects to /api/realtime as the JS SDK does (GET, read
// PB_CONNECT's clientId, POST the subscriptions with the token).
func subscribePets(baseURL, token string) (*petsSubscriber, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/api/realtime", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &petsSubscriber{close: func() { cancel(); resp.Body.Close() }}
	lines := bufio.NewScanner(resp.Body)
	clientID := ""
	for clientID == "" && lines.Scan() {
		if data, ok := strings.CutPrefix(lines.Text(), "data:"); ok {
			var connect struct {
				ClientID string `json:"clientId"`
			}
			if err := json.Unmarshal([]byte(data), &connect); err != nil {
				s.close()
				return nil, fmt.Errorf("realtime PB_CONNECT %q: %w", data, err)
			}
			clientID = connect.ClientID
		}
	}
	if clientID == "" {
		s.close()
		return nil, fmt.Errorf("realtime: no PB_CONNECT (%d): %v", resp.StatusCode, lines.Err())
	}
	body, _ := json.Marshal(map[string]any{"clientId": clientID, "subscriptions": []string{"pets/*"}})
	sreq, _ := http.NewRequest(http.MethodPost, baseURL+"/api/realtime", bytes.NewReader(body))
	sreq.Header.Set("Content-Type", "application/json")
	sreq.Header.Set("Authorization", token)
	sresp, err := http.DefaultClient.Do(sreq)
	if err != nil {
		s.close()
		return nil, err
	}
	sresp.Body.Close()
	if sresp.StatusCode != http.StatusNoContent {
		s.close()
		return nil, fmt.Errorf("realtime subscribe: status %d", sresp.StatusCode)
	}
	go func() {
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "data:") && strings.Contains(lines.Text(), `"action":"create"`) {
				s.creates.Add(1)
			}
		}
	}()
	return s, nil
}
