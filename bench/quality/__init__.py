"""Model quality: fairness kept on unseen data, frontiers against peers, thresholds and margins."""
