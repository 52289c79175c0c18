package database

// DailyOptimizeJobID is PocketBase's job id that BindDailyOptimize replaces.
const DailyOptimizeJobID = dailyOptimizeJobID
