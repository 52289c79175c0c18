package hooks

// Test helpers of package hooks shared with the external tests (hooks_test).
var CheckPetFields = checkPetFields
