package api

// Test helpers of package api shared with the external tests (api_test).
var CheckPetFields = checkPetFields

// Operations are the operation ids by route pattern, which the usage
// history counts requests by.
var Operations = operations
