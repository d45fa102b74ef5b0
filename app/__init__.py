"""FairSolve HTTP service: FastAPI routers, persistence, dataset storage and charts."""
