import { splitIntents, MAX_INTENTS } from './intent-split.util';

describe('splitIntents', () => {
  it('splits the sequencing connectives of a chained request', () => {
    expect(splitIntents('Get the weather in Paris, then convert 20 euros to dollars and book a table for two')).toEqual([
      'Get the weather in Paris',
      'convert 20 euros to dollars',
      'book a table for two',
    ]);
  });

  it('splits sentences once a connective marks a second task', () => {
    expect(splitIntents('Find the area of a rectangle with length 7. Also, calculate the area of a circle with radius 5.')).toEqual([
      'Find the area of a rectangle with length 7.',
      'calculate the area of a circle with radius 5.',
    ]);
  });

  it('keeps a multi-sentence request with one task whole', () => {
    const q = "I'm at Riga, Latvia. Can you tell me the current temperature?";
    expect(splitIntents(q)).toEqual([q]);
  });

  it('reads a sentence that does not open like a task as context of the one before', () => {
    expect(splitIntents('Imagine you are a drone operator. You are at point (5, 7). Move the drone to (10, 15). Then compute the distance travelled.')).toEqual([
      'Imagine you are a drone operator. You are at point (5, 7). Move the drone to (10, 15).',
      'compute the distance travelled.',
    ]);
    expect(splitIntents('Help me with two tasks. First, get the top cases in UK law. Second, find the GCD of 36 and 48.')).toEqual([
      'Help me with two tasks.',
      'First, get the top cases in UK law.',
      'Second, find the GCD of 36 and 48.',
    ]);
  });

  it('keeps quoted list items with the task they are data for', () => {
    expect(splitIntents("Classify these customer queries, then file a report:\n- 'How do I sign up?'\n- 'Are banks open now?'")).toEqual([
      'Classify these customer queries',
      "file a report 'How do I sign up?' 'Are banks open now?'",
    ]);
  });

  it('does not split on a bare "and" between nouns, nor on decimals and file names', () => {
    expect(splitIntents('What are the length and width of a rectangle with area 3.5?')).toHaveLength(1);
    expect(splitIntents('Read config.json and list the keys')).toEqual(['Read config.json', 'list the keys']);
  });

  it('splits list items', () => {
    expect(splitIntents('Please do:\n- send an email to Bob\n- create a calendar event tomorrow')).toEqual([
      'Please do',
      'send an email to Bob',
      'create a calendar event tomorrow',
    ]);
    expect(splitIntents('1) translate hello to French 2) get the time in London')).toEqual(['translate hello to French', 'get the time in London']);
  });

  it('splits Chinese connectives and sentence ends', () => {
    expect(splitIntents('帮我查一下北京的天气，然后把100美元换成人民币')).toEqual(['帮我查一下北京的天气', '把100美元换成人民币']);
    expect(splitIntents('查询上海的天气。另外预订明天的机票')).toEqual(['查询上海的天气', '预订明天的机票']);
  });

  it('drops fragments too short to be a task and treats long enumerations as one task', () => {
    // "ok" is no task, so nothing is left to split off
    expect(splitIntents('Book a flight to Rome, then ok.')).toEqual(['Book a flight to Rome, then ok.']);
    const many = Array.from({ length: MAX_INTENTS + 1 }, (_, i) => `get the price of item${i}`).join(' then ');
    expect(splitIntents(many)).toEqual([many]);
  });

  it('gives [] for empty input', () => {
    expect(splitIntents('   ')).toEqual([]);
    expect(splitIntents(undefined as unknown as string)).toEqual([]);
  });
});
