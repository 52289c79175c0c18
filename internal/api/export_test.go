package api

// Test helpers of package api shared with the external tests (api_test).
var CheckPetFields = checkPetFields
