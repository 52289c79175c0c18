package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"petstore/client"
)

// These examples run against a real server that TestMain starts: its
// address and key are in PETSTORE_URL and PETSTORE_KEY, and it holds three
// sold pets, Ada, Bea and Cid. Pet IDs differ from run to run, so the examples print
// names and counts.

// A program that adds a pet and lists the sold ones. Example_program in
// client_test.go keeps the package documentation and docs/client.md showing
// this very code.
func Example() {
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err) // a base URL that does not end in /v1, or an empty key
	}
	// The deadline bounds every call, its retries and waits included.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rex, err := c.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added", rex.Name, rex.Status)

	// Every sold pet, page after page.
	for pet, err := range c.ListPets(ctx, client.ListOptions{Status: client.Sold}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("sold:", pet.Name)
	}
	// Unordered output:
	// added Rex available
	// sold: Ada
	// sold: Bea
	// sold: Cid
}

// One page at a time, keeping the cursor of the next: saved, it continues
// the listing later, in another process too.
func ExampleClient_ListPage() {
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	opts := client.ListOptions{Status: client.Sold, Limit: 2}
	for n := 1; ; n++ {
		page, err := c.ListPage(ctx, opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("page %d: %d of the sold pets\n", n, len(page.Pets))
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	// Output:
	// page 1: 2 of the sold pets
	// page 2: 1 of the sold pets
}

// A walk that fails resumes from its error's cursor, missing and repeating
// no pet.
func ExampleListError() {
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	opts := client.ListOptions{Status: client.Sold, Limit: 1}
	seen := 0
	for attempt := 1; ; attempt++ {
		var stopped *client.ListError
		for _, err := range c.ListPets(ctx, opts) {
			if errors.As(err, &stopped) {
				break
			}
			seen++
		}
		if stopped == nil {
			break // the walk is complete
		}
		if attempt == 3 {
			log.Fatal(stopped)
		}
		log.Printf("%v; resuming in a minute", stopped)
		time.Sleep(time.Minute)
		opts.Cursor = stopped.Cursor
	}
	fmt.Println(seen, "sold pets")
	// Output: 3 sold pets
}

// A caller that retries across its own restarts keeps the Idempotency-Key
// with its request: every attempt adds the pet once.
func ExampleClient_CreatePetWithKey() {
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	key := client.NewIdempotencyKey() // saved with the request, before the first attempt
	tom := client.NewPet{Name: "Tom", CategoryID: 2, Status: client.Pending}
	first, err := c.CreatePetWithKey(ctx, key, tom)
	if err != nil {
		log.Fatal(err)
	}
	// After a restart, the same request again:
	again, err := c.CreatePetWithKey(ctx, key, tom)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the same pet:", again.ID == first.ID, "replayed:", again.Answer.Replayed)

	// The key names that pet: with another, it is refused.
	_, err = c.CreatePetWithKey(ctx, key, client.NewPet{Name: "Tim", CategoryID: 2})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.StatusCode, e.Code)
	}
	// Output:
	// the same pet: true replayed: true
	// 422 idempotency_key_reused
}

// A refusal is an *Error with the service's code and message.
func ExampleError() {
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.CreatePet(context.Background(), client.NewPet{Name: " ", CategoryID: 1})
	var e *client.Error
	if errors.As(err, &e) && e.Code == client.CodeInvalidRequest {
		fmt.Println(e.StatusCode, e.Message)
	}
	// Output: 400 name must not be empty or only spaces.
}

// A base URL must end in the version segment.
func ExampleNew() {
	_, err := client.New("http://127.0.0.1:8090", os.Getenv("PETSTORE_KEY"), client.Options{})
	fmt.Println(err)
	// Output: petstore client: base URL "http://127.0.0.1:8090" does not end in /v1; it is the address of the API's version segment, such as http://127.0.0.1:8090/v1
}

// The rate-limit state of a call, parsed, returned with its value.
func ExampleRateLimit() {
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}

	created, err := c.CreatePet(context.Background(), client.NewPet{Name: "Max", CategoryID: 3, Status: client.Pending})
	if err != nil {
		log.Fatal(err)
	}
	rl := created.Answer.RateLimit
	for _, w := range rl.Windows {
		fmt.Printf("%s: %d requests per %v\n", w.Name, w.Limit, w.Period)
	}
	fmt.Println("binding:", rl.Limit, "a minute")
	// Output:
	// minute: 1000 requests per 1m0s
	// day: 100000 requests per 24h0m0s
	// binding: 1000 a minute
}

// The Request-Id of a call that succeeded, returned with its value: the
// name the service's logs give the request. A refusal carries it in
// Error.RequestID.
func ExampleAnswer() {
	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}

	pet, err := c.CreatePet(context.Background(), client.NewPet{Name: "Tom", CategoryID: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added", pet.Name)
	fmt.Println("its request id has", len(pet.Answer.RequestID), "hex digits")
	// Output:
	// added Tom
	// its request id has 32 hex digits
}
