package workbench

// SetQueryScanOnlyForTest makes every query of s scan its scope (on) or
// use the indexes where they can answer (off, the default).
func SetQueryScanOnlyForTest(s *Service, on bool) { s.QueryScanOnly = on }

// QueryIndexAnswersForTest returns how many queries of s an index answered.
func QueryIndexAnswersForTest(s *Service) int64 { return s.QueryIndexAnswers.Load() }
