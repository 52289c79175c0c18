package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"petstore/client"
)

// The example of docs/client.md (compiled here, so that it stays true).
func Example() {
	c, err := client.New("http://127.0.0.1:8090/v1", os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// The deadline bounds every call, retries and waits included.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// One Idempotency-Key for this create, sent again on each retry: a
	// lost answer never makes a second Rex.
	rex, err := c.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryId: 1})
	var perr *client.Error
	switch {
	case errors.As(err, &perr) && perr.Code == client.ErrorCodeInvalidRequest:
		log.Fatalf("refused: %s", perr.Message)
	case errors.As(err, &perr) && perr.Code == client.ErrorCodeRateLimitExceeded:
		log.Fatalf("still limited after the retries; try again in %v", perr.RetryAfter)
	case err != nil:
		log.Fatal(err) // another refusal, or the network
	}
	fmt.Println("added", rex.Id)

	// Every available pet, page after page.
	for pet, err := range c.ListPets(ctx, client.ListOptions{Status: client.Available, PageSize: 100}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(pet.Id, pet.Name)
	}
}
